//! A small ROCm-like artifact directory with real ELF files built by `cc` (spec
//! `python-packaging-and-elf.md` §15.8): SONAME symlink chains, a program with an exe symlink,
//! dangling and directory links, headers, a profiler library, and the base manifest.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use crate::elf::cc;

/// `{root}/{artifact}/stage`, with `artifact_manifest.txt` listing `stage`.
pub fn stage(root: &Path, artifact: &str) -> PathBuf {
    let dir = root.join(artifact);
    let stage = dir.join("stage");
    fs_err::create_dir_all(&stage).expect("artifact dir");
    fs_err::write(dir.join("artifact_manifest.txt"), "stage\n").expect("manifest");
    stage
}

fn write(path: &Path, text: &str) {
    fs_err::create_dir_all(path.parent().expect("has a parent")).expect("dirs");
    fs_err::write(path, text).expect("write");
}

/// Builds `name` from C `source` in `dir` and removes the source.
fn build(dir: &Path, name: &str, source: &str, args: &[&str]) {
    fs_err::create_dir_all(dir).expect("dirs");
    cc(dir, name, source, args);
    fs_err::remove_file(dir.join(format!("{name}.c"))).expect("remove source");
}

/// The runtime artifacts: `core-hip` (lib, dev), `blas` (lib, dev, generic).
pub fn runtime_artifacts(root: &Path) {
    let hip = stage(root, "core-hip_lib_generic");
    build(
        &hip.join("lib"),
        "libamdhip64.so.7.1.0",
        "int hip_value(void) { return 7; }\n",
        &[
            "-shared",
            "-fPIC",
            "-Wl,-soname,libamdhip64.so.7",
            "-Wl,--enable-new-dtags,-rpath,$ORIGIN",
        ],
    );
    symlink("libamdhip64.so.7.1.0", hip.join("lib/libamdhip64.so.7")).expect("link");
    symlink("libamdhip64.so.7", hip.join("lib/libamdhip64.so")).expect("link");
    build(
        &hip.join("lib/llvm/bin"),
        "clang-20",
        "#include <stdio.h>\nint main(int c, char **v) { printf(\"clang-20 %s\\n\", c > 1 ? v[1] : \"\"); return 0; }\n",
        &["-Wl,--enable-new-dtags,-rpath,$ORIGIN/../lib"],
    );
    symlink("clang-20", hip.join("lib/llvm/bin/clang")).expect("link");
    symlink("nope", hip.join("lib/dangling")).expect("link");
    symlink("llvm", hip.join("lib/dirlink")).expect("link");
    let dev = stage(root, "core-hip_dev_generic");
    write(&dev.join("include/hip/hip_runtime.h"), "// hip\n");
    write(&dev.join("lib/cmake/hip/hip-config.cmake"), "# cmake\n");
    let blas = stage(root, "blas_lib_generic");
    let link_dir = format!("-L{}", hip.join("lib").display());
    build(
        &blas.join("lib"),
        "librocblas.so.5.0",
        "int hip_value(void);\nint blas_value(void) { return hip_value() * 6; }\n",
        &[
            "-shared",
            "-fPIC",
            "-Wl,-soname,librocblas.so.5",
            &link_dir,
            "-l:libamdhip64.so.7",
        ],
    );
    symlink("librocblas.so.5.0", blas.join("lib/librocblas.so.5")).expect("link");
    symlink("librocblas.so.5", blas.join("lib/librocblas.so")).expect("link");
    let blas_dev = stage(root, "blas_dev_generic");
    write(&blas_dev.join("include/rocblas/rocblas.h"), "// rocblas\n");
}

/// A full artifact set: runtime artifacts, a profiler library, the base manifest with
/// `KPACK_SPLIT_ARTIFACTS` = `kpack`, and GPU-specific blas files for `gfx942` (kpack) or
/// the `gfx94X-dcgpu` family (legacy).
pub fn artifact_set(root: &Path, kpack: bool) {
    runtime_artifacts(root);
    crate::base_artifact(root, kpack);
    let profiler = stage(root, "rocprofiler-systems_lib_generic");
    write(
        &profiler.join("lib/librocprof-sys.so.1"),
        "profiler library\n",
    );
    write(
        &profiler.join("bin/rocprof-sys-run"),
        "#!/bin/sh\necho run\n",
    );
    if kpack {
        let gfx = stage(root, "blas_lib_gfx942");
        write(&gfx.join(".kpack/blas_lib_gfx942.kpack"), "kpack\n");
        write(
            &gfx.join("lib/rocblas/library/Foo_gfx942.co"),
            "code object\n",
        );
    } else {
        let gfx = stage(root, "blas_lib_gfx94X-dcgpu");
        write(
            &gfx.join("lib/rocblas/library/Kernels_gfx942.co"),
            "code object\n",
        );
    }
}
