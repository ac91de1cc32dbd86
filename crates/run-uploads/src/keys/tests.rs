use super::*;

#[test]
fn key_components() {
    for ok in ["", "math-libs", "gfx94X-dcgpu", "compiler-runtime", "a.b"] {
        assert_eq!(check_key_component(ok, "--stage"), Ok(()), "{ok}");
    }
    for bad in ["..", ".", "a/b", "a\\b", "a b", "a\nb", "\t"] {
        assert!(check_key_component(bad, "--stage").is_err(), "{bad:?}");
    }
    assert_eq!(
        check_key_component("../x", "--amdgpu-family")
            .unwrap_err()
            .to_string(),
        "--amdgpu-family `../x` contains `/`, which cannot be part of an S3 key component"
    );
}

#[test]
fn flag_checks() {
    for ok in ["manifest-diff", "gfx950-dcgpu", "gfx950-dcgpu/rccl", "a.b"] {
        assert_eq!(check_key_path(ok, "--subfolder"), Ok(()), "{ok}");
    }
    for (bad, message) in [
        ("", "--subfolder is empty"),
        ("a//b", "--subfolder `a//b` has an empty path component"),
        ("a/", "--subfolder `a/` has an empty path component"),
        ("../x", "--subfolder `..` is not a name"),
        ("a b", "--subfolder `a b` contains ` `"),
    ] {
        let err = check_key_path(bad, "--subfolder").unwrap_err().to_string();
        assert!(err.starts_with(message), "{bad:?}: {err}");
    }
    for ok in [
        "index.html",
        "Index.HTML",
        "index_rccl_test_report.html",
        "i.htm",
    ] {
        assert_eq!(check_index_file_name(ok), Ok(()), "{ok}");
    }
    for (bad, message) in [
        ("", "--index-file-name is empty"),
        (
            "a/index.html",
            "--index-file-name `a/index.html` contains `/`",
        ),
        ("..", "--index-file-name `..` is not a name"),
        (
            "index.txt",
            "--index-file-name `index.txt` would be served as text/plain, not text/html",
        ),
        (
            "index",
            "--index-file-name `index` would be served as application/octet-stream",
        ),
    ] {
        let err = check_index_file_name(bad).unwrap_err().to_string();
        assert!(err.starts_with(message), "{bad:?}: {err}");
    }
}

// Spec §5.3 step 3 and §5.6 U5, U6: blank is absent, the `/`s at the ends go.
#[test]
fn log_destinations() {
    assert_eq!(log_destination(""), Ok(None));
    assert_eq!(log_destination("   "), Ok(None));
    assert_eq!(
        log_destination(" /logs/gfx950-dcgpu/rccl/ "),
        Ok(Some("logs/gfx950-dcgpu/rccl".to_owned()))
    );
    assert!(
        log_destination("/")
            .unwrap_err()
            .to_string()
            .contains("names the run's root")
    );
    assert!(
        log_destination("logs/../x")
            .unwrap_err()
            .to_string()
            .contains("`..` is not a name")
    );
}

#[test]
fn stage_names() {
    assert_eq!(check_stage_name("math-libs"), Ok(()));
    assert_eq!(
        check_stage_name("").unwrap_err().to_string(),
        "the stage name is empty"
    );
    assert!(check_stage_name("..").is_err());
}
