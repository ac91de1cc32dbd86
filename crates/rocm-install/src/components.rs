//! The component flags (`--blas`, `--no-blas`, ...) and the include patterns they give
//! (spec §10.4).

/// What every install of selected components gets: the runtime, the compiler's runtime parts
/// and the base libraries.
pub const BASE_PATTERNS: [&str; 18] = [
    "core-hipinfo_run",
    "core-runtime_run",
    "core-runtime_lib",
    "rocjitsu-hotswap_lib",
    "sysdeps_lib",
    "base_run",
    "base_lib",
    "amd-llvm_run",
    "amd-llvm_lib",
    "core-amdsmi_run",
    "core-amdsmi_lib",
    "core-hip_lib",
    "core-hip_dev",
    "core-kpack_lib",
    "core-ocl_lib",
    "core-ocl_dev",
    "rocprofiler-sdk_lib",
    "host-suite-sparse_lib",
];

/// One component flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Component {
    /// The flag's name (`blas` for `--blas`).
    pub flag: &'static str,
    /// Its negation (`no-blas`).
    pub negated: &'static str,
    /// Artifact names whose `_lib` (and with `--tests`, `_test`) archives it adds.
    pub names: &'static [&'static str],
    /// Patterns it adds as they are.
    pub patterns: &'static [&'static str],
}

const fn c(
    flag: &'static str,
    negated: &'static str,
    names: &'static [&'static str],
    patterns: &'static [&'static str],
) -> Component {
    Component {
        flag,
        negated,
        names,
        patterns,
    }
}

/// The component flags in the order their patterns are collected.
pub const COMPONENTS: [Component; 33] = [
    c("aqlprofile", "no-aqlprofile", &["aqlprofile"], &[]),
    c("blas", "no-blas", &["blas"], &[]),
    c(
        "debug-tools",
        "no-debug-tools",
        &[
            "amd-dbgapi",
            "rocgdb",
            "rocr-debug-agent",
            "rocr-debug-agent-tests",
            "gmp",
            "mpfr",
            "expat",
            "ncurses",
        ],
        &["rocgdb_run", "amd-llvm_dev"],
    ),
    c("fft", "no-fft", &["fft", "fftw3"], &[]),
    c("hipdnn", "no-hipdnn", &["hipdnn"], &[]),
    c(
        "hipdnn-integration-tests",
        "no-hipdnn-integration-tests",
        &["hipdnn-integration-tests"],
        &["hipdnn-integration-tests_run", "rand_lib"],
    ),
    c(
        "hipdnn-samples",
        "no-hipdnn-samples",
        &["hipdnn-samples"],
        &[],
    ),
    c(
        "hipfile",
        "no-hipfile",
        &["hipfile", "sysdeps-util-linux"],
        &[],
    ),
    c(
        "miopen",
        "no-miopen",
        &["miopen"],
        &["miopen_run", "rand_dev"],
    ),
    c(
        "miopenprovider",
        "no-miopenprovider",
        &["miopenprovider"],
        &[],
    ),
    c(
        "hipkernelprovider",
        "no-hipkernelprovider",
        &["hipkernelprovider"],
        &[],
    ),
    c("hiptensor", "no-hiptensor", &["hiptensor"], &[]),
    c(
        "rocdecode",
        "no-rocdecode",
        &["sysdeps-amd-mesa", "rocdecode"],
        &[
            "rocdecode_dev",
            "rocdecode_test",
            "base_dev",
            "amd-llvm_dev",
        ],
    ),
    c(
        "mpi",
        "no-mpi",
        &["openmpi"],
        &["openmpi_run", "openmpi_dev"],
    ),
    c(
        "rocjpeg",
        "no-rocjpeg",
        &["sysdeps-amd-mesa", "rocjpeg"],
        &["rocjpeg_dev", "rocjpeg_test", "base_dev", "amd-llvm_dev"],
    ),
    c("rocjitsu", "no-rocjitsu", &["rocjitsu"], &["rocjitsu_run"]),
    c("mirage", "no-mirage", &["mirage"], &["mirage_run"]),
    c(
        "hipblasltprovider",
        "no-hipblasltprovider",
        &["hipblasltprovider"],
        &[],
    ),
    c("prim", "no-prim", &["prim"], &[]),
    c("rand", "no-rand", &["rand"], &[]),
    c("rccl", "no-rccl", &["rccl"], &[]),
    c(
        "rocshmem",
        "no-rocshmem",
        &["rocshmem", "openmpi"],
        &["rocshmem_run", "openmpi_run"],
    ),
    c(
        "rocprofiler-sdk",
        "no-rocprofiler-sdk",
        &["rocprofiler-sdk", "aqlprofile"],
        &["rocprofiler-sdk_run"],
    ),
    c(
        "rocprofiler-compute",
        "no-rocprofiler-compute",
        &["rocprofiler-compute"],
        &["rocprofiler-compute_run"],
    ),
    c(
        "rocprofiler-systems",
        "no-rocprofiler-systems",
        &["rocprofiler-systems"],
        &["rocprofiler-systems_run"],
    ),
    c(
        "rocprofiler-systems-examples",
        "no-rocprofiler-systems-examples",
        &[],
        &["rocprofiler-systems-examples_test"],
    ),
    c(
        "rocrtst",
        "no-rocrtst",
        &["rocrtst", "sysdeps-hwloc", "sysdeps-libpciaccess"],
        &[],
    ),
    c(
        "rocalution",
        "no-rocalution",
        &["rocalution"],
        &["rocalution_dev"],
    ),
    c(
        "kfdtest",
        "no-kfdtest",
        &["kfdtest"],
        &["amd-llvm_dev", "amd-llvm_lib"],
    ),
    c("rocwmma", "no-rocwmma", &["rocwmma"], &["rocwmma_dev"]),
    c(
        "rpp",
        "no-rpp",
        &["rpp"],
        &["rpp_dev", "base_dev", "amd-llvm_dev"],
    ),
    c(
        "libhipcxx",
        "no-libhipcxx",
        &["libhipcxx"],
        &["amd-llvm_dev", "amd-llvm_lib", "base_dev_generic"],
    ),
    c(
        "hipthreads",
        "no-hipthreads",
        &["hipthreads", "libhipcxx"],
        &[
            "hipthreads_dev",
            "core-hip_run",
            "libhipcxx_dev",
            "amd-llvm_dev",
            "amd-llvm_lib",
            "base_dev_generic",
        ],
    ),
];

/// The component flags given, `--tests` and `--base-only`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// The flags of [`COMPONENTS`] that are on.
    pub on: Vec<&'static str>,
    /// `--tests`.
    pub tests: bool,
    /// `--base-only`.
    pub base_only: bool,
}

impl Selection {
    /// Whether component `flag` is on.
    pub fn has(&self, flag: &str) -> bool {
        self.on.contains(&flag)
    }

    /// The include patterns (regexes searched in artifact file names): the base patterns
    /// alone with `--base-only`; with any component, the base patterns, each component's own
    /// patterns, then `{name}_lib` for every collected name and, with `--tests`,
    /// `{name}_test`; with none (`--tests` alone too), none: the whole group is fetched.
    pub fn include_patterns(&self) -> Vec<String> {
        let base = BASE_PATTERNS.iter().map(|p| (*p).to_owned());
        if self.base_only {
            return base.collect();
        }
        if self.on.is_empty() {
            return Vec::new();
        }
        let mut patterns: Vec<String> = base.collect();
        let mut names: Vec<&str> = Vec::new();
        for component in COMPONENTS.iter().filter(|c| self.has(c.flag)) {
            names.extend(component.names);
            patterns.extend(component.patterns.iter().map(|p| (*p).to_owned()));
            match component.flag {
                "rocprofiler-systems" if self.tests => {
                    patterns.push("rocprofiler-sdk_dev".to_owned());
                }
                "hipthreads" => {
                    if self.has("prim") {
                        patterns.push("prim_dev".to_owned());
                    }
                    if self.has("rand") {
                        patterns.push("rand_dev".to_owned());
                    }
                }
                _ => {}
            }
        }
        patterns.extend(names.iter().map(|n| format!("{n}_lib")));
        if self.tests {
            patterns.extend(names.iter().map(|n| format!("{n}_test")));
        }
        patterns
    }
}

#[cfg(test)]
mod tests;
