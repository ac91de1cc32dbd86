use super::*;

const PART: u64 = 8 << 20;

#[test]
fn what_an_etag_can_verify() {
    let md5 = "0123456789abcdef0123456789abcdef";
    assert!(matches!(
        Expected::for_object(None, &format!("\"{md5}\""), 5, PART),
        Expected::Md5(_)
    ));
    assert!(matches!(
        Expected::for_object(None, &format!("\"{md5}-2\""), PART + 1, PART),
        Expected::MultipartMd5 { .. }
    ));
    // Parts of another size cannot be checked.
    assert!(matches!(
        Expected::for_object(None, &format!("\"{md5}-3\""), PART + 1, PART),
        Expected::Nothing
    ));
    assert!(matches!(
        Expected::for_object(Some("ab".into()), md5, 5, PART),
        Expected::Sha256(_)
    ));
}

fn verify(expected: Expected, data: &[u8], pieces: usize) -> Result<Verified, Error> {
    let mut v = Verifier::new("s3://b/k", expected, data.len() as u64).computing_sha256();
    for chunk in data.chunks(data.len().div_ceil(pieces).max(1)) {
        v.update(chunk);
    }
    v.finish()
}

#[test]
fn digests_are_checked_whatever_the_pieces() {
    let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
    let sha = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&data));
    let md5 = hex::encode(md5::Md5::digest(&data));
    // Parts of 4096: the MD5 of the three parts' MD5s.
    let mut digests = Vec::new();
    for part in data.chunks(4096) {
        digests.extend_from_slice(&md5::Md5::digest(part));
    }
    let multipart = format!("{}-3", hex::encode(md5::Md5::digest(&digests)));
    for pieces in [1, 3, 7, 1000] {
        let ok = verify(Expected::Sha256(sha.clone()), &data, pieces).unwrap();
        assert_eq!(ok.verification, Verification::Sha256);
        assert_eq!(ok.sha256.as_deref(), Some(sha.as_str()));
        let ok = verify(Expected::Md5(md5.clone()), &data, pieces).unwrap();
        assert_eq!(ok.verification, Verification::Md5);
        assert_eq!(ok.sha256.as_deref(), Some(sha.as_str()));
        let expected = Expected::for_object(None, &format!("\"{multipart}\""), 10_000, 4096);
        let ok = verify(expected, &data, pieces).unwrap();
        assert_eq!(ok.verification, Verification::MultipartMd5);
        let ok = verify(Expected::Nothing, &data, pieces).unwrap();
        assert_eq!(ok.verification, Verification::LengthOnly);
    }
}

#[test]
fn mismatches_and_short_reads_name_the_object() {
    let data = b"hello".to_vec();
    let err = verify(Expected::Sha256("1".repeat(64)), &data, 1).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("SHA-256 mismatch for `s3://b/k`: expected 1111"),
        "{err}"
    );
    let err = verify(Expected::Md5("0".repeat(32)), &data, 1).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("MD5 mismatch for `s3://b/k`: the ETag says 0000"),
        "{err}"
    );
    let mut v = Verifier::new("s3://b/k", Expected::Nothing, 6);
    v.update(&data);
    assert_eq!(
        v.finish().unwrap_err().to_string(),
        "Received 5 of the 6 bytes of `s3://b/k`"
    );
}
