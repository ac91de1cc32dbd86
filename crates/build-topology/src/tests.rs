use std::collections::BTreeSet;

use super::*;

fn topology(text: &str) -> BuildTopology {
    text.parse().unwrap()
}

fn set<'a>(names: &[&'a str]) -> BTreeSet<&'a str> {
    names.iter().copied().collect()
}

type Stage<'a> = (&'a str, &'a [&'a str]);
type Group<'a> = (&'a str, &'a [&'a str]);
type Entry<'a> = (&'a str, &'a str, &'a [&'a str]);

/// A topology of stages (name, groups), groups (name, group deps) and artifacts (name, group,
/// artifact deps), written as TOML and parsed.
fn graph(stages: &[Stage<'_>], groups: &[Group<'_>], artifacts: &[Entry<'_>]) -> BuildTopology {
    use std::fmt::Write;
    let list = |names: &[&str]| format!("{names:?}");
    let mut text = String::new();
    for (name, groups) in stages {
        writeln!(
            text,
            "[build_stages.{name:?}]\nartifact_groups = {}",
            list(groups)
        )
        .unwrap();
    }
    for (name, deps) in groups {
        writeln!(
            text,
            "[artifact_groups.{name:?}]\nartifact_group_deps = {}",
            list(deps)
        )
        .unwrap();
    }
    for (name, group, deps) in artifacts {
        let deps = list(deps);
        writeln!(
            text,
            "[artifacts.{name:?}]\nartifact_group = {group:?}\nartifact_deps = {deps}"
        )
        .unwrap();
    }
    topology(&text)
}

/// Stage `stage1` builds `group1`; `stage2` builds `group2`, which depends on `group1`.
fn two_stages(artifacts: &[Entry<'_>]) -> BuildTopology {
    graph(
        &[("stage1", &["group1"]), ("stage2", &["group2"])],
        &[("group1", &[]), ("group2", &["group1"])],
        artifacts,
    )
}

// Spec §12.2: the produced artifacts are those of the stage's groups.
#[test]
fn produced_artifacts_of_the_stage_groups() {
    let t = graph(
        &[("stage1", &["group1", "group2"])],
        &[("group1", &[]), ("group2", &[]), ("group3", &[])],
        &[
            ("artifact1", "group1", &[]),
            ("artifact2", "group1", &[]),
            ("artifact3", "group2", &[]),
            ("artifact4", "group3", &[]),
        ],
    );
    assert_eq!(
        t.produced_artifacts("stage1").unwrap(),
        set(&["artifact1", "artifact2", "artifact3"])
    );
}

// Spec §12.2: a stage's inbound artifacts come from the groups and artifacts it depends on.
#[test]
fn inbound_artifacts_of_two_stages() {
    let t = two_stages(&[
        ("artifact1", "group1", &[]),
        ("artifact2", "group2", &["artifact1"]),
    ]);
    assert_eq!(t.inbound_artifacts("stage1").unwrap(), set(&[]));
    assert_eq!(t.inbound_artifacts("stage2").unwrap(), set(&["artifact1"]));
}

// Spec §12.2: a diamond of artifact dependencies is collected once.
#[test]
fn inbound_artifacts_through_a_diamond() {
    let t = two_stages(&[
        ("D", "group1", &[]),
        ("B", "group1", &["D"]),
        ("C", "group1", &["D"]),
        ("A", "group2", &["B", "C"]),
    ]);
    assert_eq!(
        t.inbound_artifacts("stage2").unwrap(),
        set(&["B", "C", "D"])
    );
}

// Spec §12.2: the artifacts of a group dependency bring their own dependency chain.
#[test]
fn inbound_artifacts_include_a_dependency_chain() {
    let t = graph(
        &[("foundation", &["base"]), ("consumer", &["leaf"])],
        &[("base", &[]), ("leaf", &["base"])],
        &[
            ("toolchain-base", "base", &[]),
            ("toolchain-frontend", "base", &["toolchain-base"]),
            ("toolchain-runtime", "base", &["toolchain-frontend"]),
            ("leaf-artifact", "leaf", &[]),
        ],
    );
    let inbound = t.inbound_artifacts("consumer").unwrap();
    let chain = set(&["toolchain-runtime", "toolchain-frontend", "toolchain-base"]);
    assert!(chain.is_subset(&inbound), "{inbound:?}");
}

// Spec §12.2: a chain of stages, each depending on the group of the previous one.
#[test]
fn inbound_artifacts_along_a_chain_of_stages() {
    let t = graph(
        &[
            ("foundation", &["base"]),
            ("compiler", &["llvm"]),
            ("runtime", &["hip"]),
            ("libraries", &["math"]),
        ],
        &[
            ("base", &[]),
            ("llvm", &["base"]),
            ("hip", &["llvm"]),
            ("math", &["hip"]),
        ],
        &[
            ("base-artifact", "base", &[]),
            ("llvm-artifact", "llvm", &["base-artifact"]),
            ("hip-artifact", "hip", &["llvm-artifact"]),
            ("math-artifact", "math", &["hip-artifact"]),
        ],
    );
    let inbound = t.inbound_artifacts("libraries").unwrap();
    let chain = set(&["hip-artifact", "llvm-artifact", "base-artifact"]);
    assert!(chain.is_subset(&inbound), "{inbound:?}");
    assert_eq!(t.inbound_artifacts("foundation").unwrap(), set(&[]));
}

// Spec §12.2: an unknown stage is an error naming it (and here, the known stages).
#[test]
fn unknown_stage() {
    let t = topology(
        r"
        [build_stages.zeta]
        [build_stages.alpha]
        ",
    );
    for result in [
        t.produced_artifacts("x"),
        t.inbound_artifacts("x"),
        t.artifacts_to_fetch("x"),
        t.artifacts_to_push("x"),
    ] {
        let err = result.unwrap_err();
        assert_eq!(
            err.to_string(),
            "Build stage `x` not found (available stages: zeta, alpha)"
        );
        assert!(
            matches!(&err, Error::UnknownStage { name, known } if name == "x" && known == &["zeta", "alpha"])
        );
    }
}

// Spec §2.4: group dependencies are not followed transitively, dangling dependency names are
// kept, and what the stage produces is removed even when reached through a dependency.
#[test]
fn inbound_artifacts_reference_quirks() {
    let t = graph(
        &[("top", &["top", "missing-group"])],
        &[
            ("top", &["middle", "no-such-group"]),
            ("middle", &["bottom"]),
            ("bottom", &[]),
        ],
        &[
            ("top-artifact", "top", &["not-an-artifact", "cycle-a"]),
            ("middle-artifact", "middle", &[]),
            ("bottom-artifact", "bottom", &[]),
            ("cycle-a", "middle", &["cycle-b"]),
            ("cycle-b", "bottom", &["cycle-a", "top-artifact"]),
        ],
    );
    assert_eq!(
        t.inbound_artifacts("top").unwrap(),
        set(&["cycle-a", "cycle-b", "middle-artifact", "not-an-artifact"])
    );
}

// Spec §2.2: the defaults when keys are absent; unknown tables and keys are ignored.
#[test]
fn defaults_and_ignored_keys() {
    let t = topology(
        r#"
        [metadata]
        version = "2.0"
        [unknown-table]
        x = 1
        [source_sets.empty]
        [build_stages.empty]
        [artifact_groups.empty]
        disable_platforms = ["windows"]
        [artifacts.empty]
        future_key = true
        "#,
    );
    let stage = t.stage("empty").unwrap();
    assert_eq!(
        (stage.description.as_str(), stage.build_type),
        ("", BuildType::Generic)
    );
    assert!(stage.artifact_groups.is_empty());
    let group = t.artifact_group("empty").unwrap();
    assert_eq!(group.build_type, BuildType::Generic);
    assert!(group.artifact_group_deps.is_empty() && group.source_sets.is_empty());
    let set = &t.source_sets()[0];
    assert_eq!(set.name, "empty");
    assert!(set.submodules.is_empty() && set.external_git_sources.is_empty());
    let artifact = t.artifact("empty").unwrap();
    assert_eq!(artifact.artifact_group, "");
    assert_eq!(artifact.artifact_type, ArtifactType::TargetNeutral);
    assert_eq!(
        (
            artifact.platform.as_deref(),
            artifact.feature_name.as_deref()
        ),
        (None, None)
    );
    assert!(artifact.disable_platforms_if_flags_not_set.is_empty());
    assert_eq!(
        (artifact.feature_name(), artifact.feature_group()),
        ("EMPTY".into(), String::new())
    );
    assert!(t.produced_artifacts("empty").unwrap().is_empty());
    assert!(t.inbound_artifacts("empty").unwrap().is_empty());
}

// Spec §2.2: every key of every table, and the representative slice in words.
#[test]
fn every_key() {
    let t = topology(
        r#"
        [source_sets.rocm-libraries]
        description = "Math libraries"
        submodules = ["rocm-libraries"]
        disable_platforms = ["windows"]
        path_prefixes = ["projects/"]
        external_git_sources = [
          { name = "extra", origin = "https://example.com/extra.git", commit = "abc123", path = "optional-sources/extra" },
        ]
        [build_stages.math-libs]
        description = "Math"
        type = "per-arch"
        artifact_groups = ["math-libs", "ml-libs"]
        [artifact_groups.math-libs]
        type = "per-arch"
        artifact_group_deps = ["hip-runtime", "profiler-core"]
        source_sets = ["rocm-libraries", "rocm-systems", "math-libs"]
        [artifacts.core-runtime]
        artifact_group = "core-runtime"
        feature_name = "CORE_RUNTIME"
        feature_group = "CORE"
        disable_platforms_if_flags_not_set = { windows = "HSA_WINDOWS_SHARED_RUNTIME" }
        test_artifacts = ["core-hiptests", "rocrtst"]
        [artifacts.blas]
        artifact_group = "math-libs"
        type = "target-specific"
        artifact_deps = ["core-runtime", "core-hip"]
        split_databases = ["rocblas", "hipblaslt"]
        disable_processors = ["aarch64"]
        python_requires = ["-r requirements.txt"]
        [artifacts.core-hipinfo]
        artifact_group = "hip-runtime"
        platform = "windows"
        disable_platforms = ["linux"]
        "#,
    );
    let set = &t.source_sets()[0];
    assert_eq!(set.external_git_sources[0].path, "optional-sources/extra");
    assert_eq!(set.external_git_sources[0].commit, "abc123");
    assert_eq!(set.path_prefixes, ["projects/"]);
    assert_eq!(t.stage("math-libs").unwrap().build_type, BuildType::PerArch);
    let group = t.artifact_group("math-libs").unwrap();
    assert_eq!(group.build_type.to_string(), "per-arch");
    assert_eq!(group.source_sets.len(), 3);

    let runtime = t.artifact("core-runtime").unwrap();
    assert_eq!(
        (runtime.feature_name(), runtime.feature_group()),
        ("CORE_RUNTIME".into(), "CORE".into())
    );
    assert!(runtime.is_disabled_on_platform("windows", &[]));
    assert!(!runtime.is_disabled_on_platform("windows", &["HSA_WINDOWS_SHARED_RUNTIME"]));
    assert!(!runtime.is_disabled_on_platform("linux", &[]));
    assert!(!runtime.is_disabled_on_platform("", &[]));
    assert_eq!(runtime.test_artifacts, ["core-hiptests", "rocrtst"]);

    let blas = t.artifact("blas").unwrap();
    assert_eq!(blas.artifact_type.to_string(), "target-specific");
    assert_eq!(
        (blas.feature_name(), blas.feature_group()),
        ("BLAS".into(), "MATH_LIBS".into())
    );
    assert!(blas.is_disabled_on_processor("aarch64"));
    assert!(!blas.is_disabled_on_processor("x86_64") && !blas.is_disabled_on_processor(""));
    assert_eq!(blas.split_databases, ["rocblas", "hipblaslt"]);
    assert_eq!(blas.python_requires, ["-r requirements.txt"]);

    let hipinfo = t.artifact("core-hipinfo").unwrap();
    assert_eq!(hipinfo.platform.as_deref(), Some("windows"));
    assert!(hipinfo.is_disabled_on_platform("linux", &[]));
}

// Spec §2.1: tables keep file order.
#[test]
fn file_order() {
    let t = topology(
        r"
        [build_stages.zeta]
        [artifacts.z]
        [build_stages.alpha]
        [artifacts.a]
        [build_stages.mid]
        [artifacts.m]
        ",
    );
    assert_eq!(
        t.stage_names().collect::<Vec<_>>(),
        ["zeta", "alpha", "mid"]
    );
    assert_eq!(t.artifact_names().collect::<Vec<_>>(), ["z", "a", "m"]);
}

// Invalid TOML names the line and column; a duplicate table is a TOML error.
#[test]
fn invalid_toml_reports_line_and_column() {
    let cases = [
        (
            "[build_stages.a]\nartifact_groups = [\"x\",\n  \"y\" \"z\"]\n",
            "Invalid TOML at line 3, column 7: missing comma between array elements, expected `,`",
        ),
        (
            "[build_stages.a]\n[build_stages.a]\n",
            "Invalid TOML at line 2, column 15: duplicate key",
        ),
        (
            "[artifacts.a]\ndescription = \"é\"\nartifact_deps = \"blas\"\n",
            "Invalid TOML at line 3, column 17: invalid type: string \"blas\", expected a sequence",
        ),
        (
            "[artifacts.a]\npython_requires = \"pkg\"\n",
            "Invalid TOML at line 2, column 19: invalid type: string \"pkg\", expected a sequence",
        ),
        (
            "[artifacts.a]\ndisable_platforms_if_flags_not_set = \"X\"\n",
            "Invalid TOML at line 2, column 38: invalid type: string \"X\", expected a map",
        ),
        (
            "[build_stages.a]\ntype = \"per-target\"\n",
            "Invalid TOML at line 2, column 8: unknown variant `per-target`, expected `generic` or `per-arch`",
        ),
    ];
    for (text, expected) in cases {
        let err = text.parse::<BuildTopology>().unwrap_err();
        assert_eq!(err.to_string(), expected, "{text}");
        assert!(std::error::Error::source(&err).is_none());
    }
}

#[test]
fn position_of_a_byte_offset() {
    let text = "ab\nçd\n";
    assert_eq!(Position::at(text, 0), Position { line: 1, column: 1 });
    assert_eq!(Position::at(text, 3), Position { line: 2, column: 1 });
    // Inside `ç`: the character it belongs to.
    assert_eq!(Position::at(text, 4), Position { line: 2, column: 1 });
    assert_eq!(Position::at(text, 5), Position { line: 2, column: 2 });
    assert_eq!(Position::at(text, 99), Position { line: 3, column: 1 });
}

// Spec §2.6: the reference's validation, each kind of problem once.
#[test]
fn validation_problems() {
    let t = topology(
        r#"
        [source_sets.Sources]
        submodules = ["shared"]
        disable_platforms = ["macos"]
        path_prefixes = ["", "/abs", "a/../b", "lib/"]
        external_git_sources = [
          { name = "", origin = "o", commit = "c", path = "optional-sources/x" },
          { name = "ok", origin = "", commit = "", path = "elsewhere/ok" },
        ]
        [source_sets.other]
        submodules = ["shared"]
        path_prefixes = ["lib"]
        [build_stages.Stage]
        artifact_groups = ["nowhere"]
        [artifact_groups.g1]
        artifact_group_deps = ["g2", "ghost"]
        source_sets = ["no-set"]
        [artifact_groups.g2]
        artifact_group_deps = ["g1"]
        [artifacts.a]
        artifact_group = "g9"
        artifact_deps = ["b", "missing"]
        feature_name = "lower"
        platform = "macos"
        disable_processors = ["riscv"]
        disable_platforms_if_flags_not_set = { beos = "some_flag" }
        [artifacts.b]
        artifact_group = "g1"
        artifact_deps = ["a"]
        "#,
    );
    let problems: Vec<String> = t.problems().iter().map(ToString::to_string).collect();
    assert_eq!(
        problems,
        [
            "Build stage `Stage` should be lowercase-with-hyphens",
            "Artifact `a` feature_name `lower` should be UPPERCASE_WITH_UNDERSCORES",
            "Artifact `a` has invalid platform `macos` (expected one of: linux, windows)",
            "Artifact `a` has invalid disable_platforms_if_flags_not_set `beos` (expected one of: linux, windows)",
            "Artifact `a` disable_platforms_if_flags_not_set `some_flag` should be UPPERCASE_WITH_UNDERSCORES",
            "Artifact `a` has invalid disable_processors `riscv` (expected one of: aarch64, ppc64le, x86_64)",
            "Source set `Sources` should be lowercase-with-hyphens",
            "Source set `Sources` has invalid disable_platforms `macos` (expected one of: linux, windows)",
            "External git source `` in source set `Sources` has no name",
            "External git source `ok` in source set `Sources` has no origin",
            "External git source `ok` in source set `Sources` has no commit",
            "External git source `ok` has invalid path `elsewhere/ok` (must be under optional-sources/)",
            "Source set `Sources` has invalid path `` (must not be empty)",
            "Source set `Sources` has invalid path `/abs` (must be relative)",
            "Source set `Sources` has invalid path `a/../b` (must not contain `..`)",
            "Build stage `Stage` references unknown artifact group `nowhere`",
            "Artifact group `g1` references unknown artifact group `ghost`",
            "Artifact group `g1` references unknown source set `no-set`",
            "Artifact `a` references unknown artifact group `g9`",
            "Artifact `a` references unknown artifact `missing`",
            "Circular dependency detected involving artifact group `g1`",
            "Circular dependency detected involving artifact `a`",
            "Submodule `shared` is used by both source sets `Sources` and `other`",
            "Path prefix `lib` is used by both source sets `Sources` and `other`",
        ]
    );
    let err = t.validate().unwrap_err();
    assert!(matches!(&err, Error::Invalid(p) if p.len() == problems.len()));
    assert!(
        err.to_string()
            .starts_with("Invalid build topology: Build stage `Stage` should")
    );
}

#[test]
fn the_family_table_path_has_the_platform_separators() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir
        .path()
        .join("cmake")
        .join("therock_amdgpu_targets.cmake");
    fs_err::create_dir_all(table.parent().unwrap()).unwrap();
    fs_err::write(&table, "").unwrap();
    let checkout = Checkout {
        topology: None,
        therock_dir: Some(dir.path().to_path_buf()),
    };
    let path = checkout.family_table_path().unwrap();
    assert_eq!(path, table);
    // Messages print it as one path (no `\` and `/` mixed on Windows).
    let shown = path.display().to_string();
    assert!(!(shown.contains('/') && shown.contains('\\')), "{shown}");
}
