use super::{next_link, percent_encode};

#[test]
fn link_header_next() {
    let h = r#"<https://api.github.com/x?page=2>; rel="next", <https://api.github.com/x?page=5>; rel="last""#;
    assert_eq!(
        next_link(h).as_deref(),
        Some("https://api.github.com/x?page=2")
    );
    assert_eq!(next_link(r#"<https://a/x?page=1>; rel="prev""#), None);
    assert_eq!(next_link(""), None);
}

#[test]
fn encoding() {
    assert_eq!(percent_encode("feature/x y"), "feature%2Fx%20y");
    assert_eq!(percent_encode("v7.0_rc-1~"), "v7.0_rc-1~");
}
