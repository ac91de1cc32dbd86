//! The topology as the artifact manager reads it: the reference stage table from a file, the
//! artifact manager's test topology, and the errors of loading.

extern crate rock_ci_build_topology as build_topology;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use build_topology::{ALL_STAGES, BuildTopology, BuildType, Error};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/BUILD_TOPOLOGY.toml")
}

fn load_fixture() -> BuildTopology {
    BuildTopology::load(fixture()).unwrap()
}

fn names(text: &str) -> BTreeSet<&str> {
    text.split(", ").filter(|s| !s.is_empty()).collect()
}

/// Spec §2.5, one stage a line in file order: `name | type | groups | inbound | produced`.
/// `$HIP` is the six artifacts every HIP consumer needs, `$SYSDEPS` the nine `sysdeps-*`,
/// `$DCTOOLS` the inbound set of `dctools-core`.
const STAGE_TABLE: &str = "\
compiler-runtime | generic | third-party-sysdeps, base, compiler, core-amdsmi, core-runtime, third-party-libs, hip-runtime, kfdtest, opencl-runtime, profiler-core, rocjitsu |  | amd-llvm, aqlprofile, base, core-amdsmi, core-hip, core-hipinfo, core-kpack, core-ocl, core-ocl-icd, core-runtime, elfio, fftw3, flatbuffers, fmt, hipify, host-blas, host-suite-sparse, kfdtest, mirage, nlohmann-json, openmpi, rocjitsu, rocjitsu-hotswap, rocprofiler-compute, rocprofiler-sdk, spdlog, sysdeps, $SYSDEPS
wsl-rocdxg | generic | wsl-rocdxg | $HIP | wsl-rocdxg
runtime-tests | generic | runtime-tests | $HIP, core-amdsmi, core-hipinfo, core-ocl, core-ocl-icd, sysdeps-hwloc, sysdeps-libmnl, sysdeps-libnl, sysdeps-libpciaccess | core-hiptests, rocrtst
math-libs | per-arch | math-libs, ml-libs | $HIP, aqlprofile, core-amdsmi, core-hipinfo, elfio, fftw3, host-blas, host-suite-sparse, openmpi, rocprofiler-compute, rocprofiler-sdk, spdlog, sysdeps-libmnl, sysdeps-libnl | blas, composable-kernel, fft, hipblasltprovider, hipdnn, hipdnn-integration-tests, hipdnn-samples, hipkernelprovider, hiptensor, hipthreads, libhipcxx, miopen, miopenprovider, prim, rand, rocalution, rocwmma, solver, sparse, support
comm-libs | generic | comm-libs | $HIP, aqlprofile, core-amdsmi, core-hipinfo, elfio, hipify, openmpi, rocjitsu, rocjitsu-hotswap, rocprofiler-sdk, sysdeps-libmnl, sysdeps-libnl | rccl, rocshmem
cv-libs | generic | cv-libs | $HIP, core-hipinfo, $SYSDEPS | rpp
storage-libs | generic | storage-libs | $HIP, core-hipinfo, sysdeps-util-linux | hipfile
debug-tools | generic | debug-tools | $HIP, hipify, $SYSDEPS | amd-dbgapi, rocgdb, rocr-debug-agent, rocr-debug-agent-tests
dctools-core | generic | dctools-core | $DCTOOLS | rdc
profiler-apps | generic | profiler-apps | $DCTOOLS, hipify, spdlog | rocprofiler-systems, rocprofiler-systems-examples
media-libs | generic | media-libs | $HIP, core-hipinfo, $SYSDEPS | rocdecode, rocjpeg, sysdeps-amd-mesa
";

/// The table with its abbreviations expanded.
fn stage_table() -> String {
    STAGE_TABLE
        .replace(
            "$DCTOOLS",
            "$HIP, aqlprofile, core-amdsmi, elfio, openmpi, rocprofiler-compute, \
             rocprofiler-sdk, sysdeps-libmnl, sysdeps-libnl",
        )
        .replace(
            "$HIP",
            "amd-llvm, base, core-hip, core-kpack, core-runtime, sysdeps",
        )
        .replace(
            "$SYSDEPS",
            "sysdeps-expat, sysdeps-gmp, sysdeps-hwloc, sysdeps-libmnl, sysdeps-libnl, \
             sysdeps-libpciaccess, sysdeps-mpfr, sysdeps-ncurses, sysdeps-util-linux",
        )
}

// Spec §2.5: every stage's type, groups, inbound and produced sets, with their counts.
#[test]
fn reference_stage_table() {
    let topology = load_fixture();
    let table = stage_table();
    let rows: Vec<Vec<&str>> = table
        .lines()
        .map(|line| line.split(" | ").map(str::trim).collect())
        .collect();
    let stage_names: Vec<&str> = rows.iter().map(|row| row[0]).collect();
    assert_eq!(topology.stage_names().collect::<Vec<_>>(), stage_names);
    let counts = [
        (0, 36),
        (6, 1),
        (14, 2),
        (19, 20),
        (17, 2),
        (16, 1),
        (8, 1),
        (16, 4),
        (14, 1),
        (16, 2),
        (16, 3),
    ];
    for (row, (n_in, n_out)) in rows.iter().zip(counts) {
        let [name, build_type, groups, inbound, produced] = row[..] else {
            panic!("{row:?}");
        };
        let stage = topology.stage(name).unwrap();
        assert_eq!(stage.build_type.as_str(), build_type, "{name}");
        assert_eq!(stage.artifact_groups.join(", "), groups, "{name}");
        let actual_inbound = topology.inbound_artifacts(name).unwrap();
        let actual_produced = topology.produced_artifacts(name).unwrap();
        assert_eq!(actual_inbound, names(inbound), "inbound of {name}");
        assert_eq!(actual_produced, names(produced), "produced by {name}");
        assert_eq!(
            (actual_inbound.len(), actual_produced.len()),
            (n_in, n_out),
            "{name}"
        );
        assert_eq!(topology.artifacts_to_fetch(name).unwrap(), actual_inbound);
        assert_eq!(topology.artifacts_to_push(name).unwrap(), actual_produced);
    }
}

// Spec §2.2: 12 source sets, 11 stages, 22 groups, 73 artifacts; every group in exactly one
// stage; the file is consistent; the representative slice.
#[test]
fn reference_file_shape() {
    let topology = load_fixture();
    assert_eq!(
        (
            topology.source_sets().len(),
            topology.stages().len(),
            topology.artifact_groups().len(),
            topology.artifacts().len()
        ),
        (12, 11, 22, 73)
    );
    for group in topology.artifact_groups() {
        let owners = topology
            .stages()
            .iter()
            .filter(|s| s.artifact_groups.contains(&group.name))
            .count();
        assert_eq!(owners, 1, "{}", group.name);
    }
    assert_eq!(topology.problems(), []);
    topology.validate().unwrap();

    let libraries = topology
        .source_sets()
        .iter()
        .find(|s| s.name == "rocm-libraries")
        .unwrap();
    assert_eq!(libraries.submodules, ["rocm-libraries"]);
    let math = topology.artifact_group("math-libs").unwrap();
    assert_eq!(math.build_type, BuildType::PerArch);
    assert_eq!(math.artifact_group_deps, ["hip-runtime", "profiler-core"]);
    assert_eq!(
        math.source_sets,
        ["rocm-libraries", "rocm-systems", "math-libs"]
    );
    let blas = topology.artifact("blas").unwrap();
    assert_eq!(blas.artifact_type.as_str(), "target-specific");
    assert_eq!(
        blas.artifact_deps,
        [
            "core-runtime",
            "core-hip",
            "core-amdsmi",
            "host-blas",
            "host-suite-sparse",
            "rocprofiler-sdk",
            "spdlog"
        ]
    );
    assert_eq!(
        blas.split_databases,
        ["rocblas", "hipblaslt", "hipsparselt"]
    );
    let runtime = topology.artifact("core-runtime").unwrap();
    assert_eq!(
        (runtime.feature_name(), runtime.feature_group()),
        ("CORE_RUNTIME".into(), "CORE".into())
    );
    assert_eq!(
        runtime
            .disable_platforms_if_flags_not_set
            .get("windows")
            .map(String::as_str),
        Some("HSA_WINDOWS_SHARED_RUNTIME")
    );
    assert_eq!(runtime.test_artifacts, ["core-hiptests", "rocrtst"]);
    assert_eq!(
        topology
            .artifact("core-hipinfo")
            .unwrap()
            .platform
            .as_deref(),
        Some("windows")
    );
}

// Spec §4.6 and §4.7: `all` fetches every artifact and pushes every stage's products; with
// every group in a stage, both are all 73.
#[test]
fn reference_all_stages() {
    let topology = load_fixture();
    let every: BTreeSet<&str> = topology.artifact_names().collect();
    assert_eq!(every.len(), 73);
    assert_eq!(topology.artifacts_to_fetch(ALL_STAGES).unwrap(), every);
    assert_eq!(topology.artifacts_to_push(ALL_STAGES).unwrap(), every);
    let err = topology.inbound_artifacts(ALL_STAGES).unwrap_err();
    assert!(err.to_string().starts_with(
        "Build stage `all` not found (available stages: compiler-runtime, wsl-rocdxg,"
    ));
}

/// Spec §12.1: the artifact manager's test topology, plus a group no stage builds.
const CLI_TOPOLOGY: &str = r#"
[build_stages.upstream-stage]
artifact_groups = ["upstream-group"]
[build_stages.second-upstream-stage]
artifact_groups = ["second-upstream-group"]
[build_stages.downstream-stage]
artifact_groups = ["downstream-group"]

[artifact_groups]
upstream-group = {}
second-upstream-group = {}
downstream-group = { artifact_group_deps = ["upstream-group", "second-upstream-group"] }
unbuilt-group = {}

[artifacts]
test-artifact = { artifact_group = "upstream-group", type = "target-neutral" }
second-artifact = { artifact_group = "second-upstream-group", type = "target-neutral" }
downstream-artifact = { artifact_group = "downstream-group", type = "target-neutral", artifact_deps = ["test-artifact", "second-artifact"] }
unbuilt-artifact = { artifact_group = "unbuilt-group" }
"#;

// Spec §12.1: fetch, push and copy sets of the artifact manager's test topology; `all`
// fetches every artifact but pushes only what some stage produces.
#[test]
fn artifact_manager_test_topology() {
    let topology: BuildTopology = CLI_TOPOLOGY.parse().unwrap();
    let set = |names: &[&'static str]| names.iter().copied().collect::<BTreeSet<_>>();
    assert_eq!(
        topology.artifacts_to_fetch("downstream-stage").unwrap(),
        set(&["second-artifact", "test-artifact"])
    );
    assert_eq!(
        topology.artifacts_to_fetch("upstream-stage").unwrap(),
        set(&[])
    );
    assert_eq!(
        topology.artifacts_to_fetch(ALL_STAGES).unwrap(),
        set(&[
            "downstream-artifact",
            "second-artifact",
            "test-artifact",
            "unbuilt-artifact"
        ])
    );
    assert_eq!(
        topology.artifacts_to_push(ALL_STAGES).unwrap(),
        set(&["downstream-artifact", "second-artifact", "test-artifact"])
    );
    // Copy reads each listed stage's produced set.
    assert_eq!(
        topology.produced_artifacts("upstream-stage").unwrap(),
        set(&["test-artifact"])
    );
    let copied: BTreeSet<&str> = ["upstream-stage", "second-upstream-stage"]
        .into_iter()
        .flat_map(|s| topology.produced_artifacts(s).unwrap())
        .collect();
    assert_eq!(copied, set(&["second-artifact", "test-artifact"]));
    let err = topology
        .produced_artifacts("nonexistent-stage")
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Build stage `nonexistent-stage` not found (available stages: upstream-stage, \
         second-upstream-stage, downstream-stage)"
    );
}

// Spec §2.1 and §4.10: a missing file names its path.
#[test]
fn missing_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("BUILD_TOPOLOGY.toml");
    let err = BuildTopology::load(&path).unwrap_err();
    assert!(matches!(&err, Error::NotFound(p) if *p == path));
    assert_eq!(
        err.to_string(),
        format!("`BUILD_TOPOLOGY.toml` not found at `{}`", path.display())
    );
}

// A path that cannot be read names the path and chains the cause once.
#[test]
fn unreadable_file() {
    let dir = tempfile::tempdir().unwrap();
    let err = BuildTopology::load(dir.path()).unwrap_err();
    assert!(matches!(&err, Error::Read { path, .. } if path == dir.path()));
    assert_eq!(
        err.to_string(),
        format!("Failed to read `{}`", dir.path().display())
    );
    let source = std::error::Error::source(&err).unwrap();
    assert!(!source.to_string().contains(&*dir.path().to_string_lossy()));
    assert!(std::error::Error::source(source).is_none());
}

// Spec §2.1 and §4.10: invalid TOML names the file, the line and the column.
#[test]
fn invalid_toml_file() {
    use std::io::Write;
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(b"[build_stages.a]\nartifact_groups = [\"x\"\n\n[artifacts.b]\n")
        .unwrap();
    let path = file.path();
    let err = BuildTopology::load(path).unwrap_err();
    let Error::Toml {
        path: Some(err_path),
        position: Some(position),
        ..
    } = &err
    else {
        panic!("{err:?}");
    };
    assert_eq!(err_path, path);
    assert_eq!((position.line, position.column), (4, 1));
    assert!(
        err.to_string().ends_with(&format!(
            "Invalid TOML in `{}` at line 4, column 1: {}",
            path.display(),
            "missing comma between array elements, expected `,`"
        )),
        "{err}"
    );
}

// Dangling references load (the per-stage sets are defined for them) and are reported by
// validation.
#[test]
fn dangling_references() {
    let topology: BuildTopology = r#"
        [build_stages.s]
        artifact_groups = ["g", "no-group"]
        [artifact_groups.g]
        artifact_group_deps = ["no-dep-group"]
        [artifacts.a]
        artifact_group = "g"
        artifact_deps = ["no-artifact"]
        [artifacts.orphan]
        artifact_group = "no-owner"
    "#
    .parse()
    .unwrap();
    assert_eq!(
        topology.inbound_artifacts("s").unwrap(),
        BTreeSet::from(["no-artifact"])
    );
    assert_eq!(
        topology.produced_artifacts("s").unwrap(),
        BTreeSet::from(["a"])
    );
    let problems: Vec<String> = topology
        .problems()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        problems,
        [
            "Build stage `s` references unknown artifact group `no-group`",
            "Artifact group `g` references unknown artifact group `no-dep-group`",
            "Artifact `a` references unknown artifact `no-artifact`",
            "Artifact `orphan` references unknown artifact group `no-owner`",
        ]
    );
    assert!(matches!(topology.validate(), Err(Error::Invalid(p)) if p.len() == 4));
}
