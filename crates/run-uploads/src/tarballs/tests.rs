use super::*;

#[test]
fn multiarch_selection() {
    let names: Vec<String> = [
        "therock-dist-linux-gfx94X-dcgpu-7.14.0.tar.gz",
        "therock-dist-linux-multiarch-tests-7.14.0.tar.gz",
        "therock-dist-linux-multiarch-7.14.0.dev0+13caf791.tar.gz",
        "therock-dist-windows-multiarch-7.14.0.tar.gz",
    ]
    .map(String::from)
    .to_vec();
    assert_eq!(
        multiarch_tarball(&names, Platform::Linux),
        Some("therock-dist-linux-multiarch-7.14.0.dev0+13caf791.tar.gz")
    );
    assert_eq!(
        multiarch_tarball(&names, Platform::Windows),
        Some("therock-dist-windows-multiarch-7.14.0.tar.gz")
    );
    assert_eq!(multiarch_tarball(&names[..2], Platform::Linux), None);
    assert_eq!(
        tarball_urls("https://b/x%2By.tar.gz"),
        r#"{"multiarch": "https://b/x%2By.tar.gz"}"#
    );
}
