use super::*;

#[test]
fn in_place_writes_growth_changes_and_shrinks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    let old: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
    for new in [
        {
            let mut n = old.clone();
            n[5000] ^= 1;
            n.extend_from_slice(b"tail");
            n
        },
        old[..300].to_vec(),
        old.clone(),
    ] {
        fs_err::write(&path, &old).unwrap();
        in_place(&path, &old, &new).unwrap();
        assert_eq!(fs_err::read(&path).unwrap(), new);
    }
    fs_err::write(&path, b"unrelated longer contents").unwrap();
    in_place(&path, &[], b"short").unwrap();
    assert_eq!(fs_err::read(&path).unwrap(), b"short");
}
