use std::path::Path;

use super::{ROCK_CI, rock_ci_for, tool_of};

#[test]
fn the_tool_is_the_file_stem() {
    assert_eq!(
        tool_of(Path::new("/venv/Scripts/fetch_artifacts.exe")).unwrap(),
        "fetch_artifacts"
    );
    assert_eq!(
        tool_of(Path::new("/venv/bin/install_rocm_from_artifacts")).unwrap(),
        "install_rocm_from_artifacts"
    );
}

#[test]
fn rock_ci_beside_the_launcher_first_else_on_path() {
    let dir = tempfile::tempdir().unwrap();
    let launcher = dir.path().join("fetch_artifacts.exe");
    assert_eq!(rock_ci_for(&launcher), Path::new(ROCK_CI));
    fs_err::write(dir.path().join(ROCK_CI), b"").unwrap();
    assert_eq!(rock_ci_for(&launcher), dir.path().join(ROCK_CI));
}
