use super::*;

#[test]
fn keeps_relative_entries_and_directories_holding_a_needed_library() {
    let needed = vec![b"liba.so".to_vec(), b"libb.so".to_vec()];
    let lookup = |p: &Path| match p.to_str().unwrap() {
        "/one/liba.so" | "/two/liba.so" | "/three/libb.so" => Some(62),
        "/arm/libb.so" => Some(183),
        _ => None,
    };
    let path = b"$ORIGIN:/none:/arm:/one:/two:/three:lib:";
    assert_eq!(
        shrink(path, &needed, 62, &[], &lookup),
        b"$ORIGIN:/one:/three:lib"
    );
    assert_eq!(
        shrink(path, &needed, 62, &["/t".to_owned()], &lookup),
        b"$ORIGIN:/two:/three:lib"
    );
    assert_eq!(shrink(b"/none", &needed, 62, &[], &lookup), b"");
}
