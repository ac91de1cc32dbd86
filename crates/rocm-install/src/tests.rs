use super::*;

fn request(source: Source) -> Request {
    // The defaults of `Request::new`, with the platform, components and unpackings fixed.
    let mut request = Request::new("./therock-build", "gfx94X-dcgpu", source);
    request.selection = Selection {
        on: vec!["blas"],
        tests: false,
        base_only: false,
    };
    request.platform = Platform::Linux;
    request.extract_concurrency = 2;
    request
}

#[test]
fn the_fetch_command_line_is_the_reference_s() {
    let mut r = request(Source::Run("555".into()));
    r.dry_run = true;
    r.run_github_repo = Some("ROCm/TheRock".parse().unwrap());
    let argv = fetch_argv(&r, "555", "gfx942");
    assert_eq!(
        argv[..13].join(" "),
        "--run-id 555 --artifact-group gfx94X-dcgpu --output-dir therock-build --flatten --amdgpu-targets gfx942 --dry-run --run-github-repo ROCm/TheRock core-hipinfo_run"
    );
    assert_eq!(argv.last().unwrap(), "blas_lib");
    // As pathlib prints it: with the system's separator.
    assert_eq!(
        pathlib_text(Path::new("./a//b/")),
        if cfg!(windows) { "a\\b" } else { "a/b" }
    );
    assert_eq!(pathlib_text(Path::new("./")), ".");
    assert!(r.needs_family_table());
    r.amdgpu_targets = "gfx942".into();
    assert!(!r.needs_family_table());
    assert!(!request(Source::LatestRelease).needs_family_table());
}

#[test]
fn targets_come_from_the_family_table() {
    let map = build_topology::FamilyMap::parse(
        "therock_add_amdgpu_target(gfx942 \"MI300\" FAMILY dcgpu-all gfx94X-all gfx94X-dcgpu)\n",
    );
    let mut r = request(Source::Run("1".into()));
    r.family_table = Some(FamilyTable::Loaded(map));
    let mut out = Vec::new();
    assert_eq!(derived_targets(&r, &mut out).unwrap(), "gfx942");
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "Auto-deriving --amdgpu-targets from family 'gfx94X-dcgpu': gfx942\n"
    );
    r.family_table = Some(FamilyTable::Unavailable("no file".into()));
    let mut out = Vec::new();
    assert_eq!(derived_targets(&r, &mut out).unwrap(), "");
    assert!(String::from_utf8(out).unwrap().contains("(no file)"));
}

#[test]
fn copies_land_as_rsync_puts_them() {
    let out = Path::new("/o");
    assert_eq!(
        copy_destination(Path::new("src/rocm-7"), out),
        Path::new("/o/rocm-7")
    );
    assert_eq!(
        copy_destination(Path::new("src/rocm-7/"), out),
        Path::new("/o")
    );
}

#[test]
fn the_family_table_is_loaded_only_when_needed() {
    let dir = PathBuf::from("/nonexistent/therock");
    let mut r = request(Source::LatestRelease);
    r.load_family_table(Some(dir.clone()));
    assert!(r.family_table.is_none());
    let mut r = request(Source::Run("5".into()));
    r.load_family_table(Some(dir));
    assert!(matches!(r.family_table, Some(FamilyTable::Unavailable(_))));
}

#[test]
fn an_absolute_output_has_no_trailing_separator() {
    let here = std::env::current_dir().unwrap();
    let sep = std::path::MAIN_SEPARATOR;
    for given in [
        format!("not-yet-made{sep}"),
        format!("not-yet-made{sep}{sep}"),
        "not-yet-made".to_owned(),
    ] {
        let shown = super::absolute(std::path::Path::new(&given)).unwrap();
        assert_eq!(shown, here.join("not-yet-made"), "{given}");
        assert!(
            !shown.to_string_lossy().ends_with(sep),
            "{given}: {}",
            shown.display()
        );
    }
}
