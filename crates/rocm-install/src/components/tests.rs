use super::Selection;

fn select(on: &[&'static str], tests: bool, base_only: bool) -> Vec<String> {
    Selection {
        on: on.to_vec(),
        tests,
        base_only,
    }
    .include_patterns()
}

#[test]
fn spec_vectors() {
    let p = select(&["blas"], false, false);
    assert!(p.contains(&"blas_lib".into()) && !p.contains(&"blas_test".into()));
    assert!(!p.contains(&"mirage_run".into()));
    let p = select(&["blas"], true, false);
    assert!(p.contains(&"blas_lib".into()) && p.contains(&"blas_test".into()));
    assert!(select(&["mirage"], false, false).contains(&"mirage_run".into()));
    assert!(select(&[], false, true).contains(&"rocjitsu-hotswap_lib".into()));
    let p = select(&["hipdnn-integration-tests"], false, false);
    assert!(p.contains(&"hipdnn-integration-tests_run".into()) && p.contains(&"rand_lib".into()));
    assert!(select(&["debug-tools"], false, false).contains(&"amd-llvm_dev".into()));
    // The observed full list for `--blas --miopen --tests`.
    assert_eq!(
        select(&["blas", "miopen"], true, false).join(" "),
        "core-hipinfo_run core-runtime_run core-runtime_lib rocjitsu-hotswap_lib sysdeps_lib base_run base_lib amd-llvm_run amd-llvm_lib core-amdsmi_run core-amdsmi_lib core-hip_lib core-hip_dev core-kpack_lib core-ocl_lib core-ocl_dev rocprofiler-sdk_lib host-suite-sparse_lib miopen_run rand_dev blas_lib miopen_lib blas_test miopen_test"
    );
}

#[test]
fn base_only_wins_and_tests_alone_selects_everything() {
    assert_eq!(select(&["blas"], true, true), select(&[], false, true));
    assert_eq!(select(&[], false, true).len(), 18);
    assert!(select(&[], true, false).is_empty());
    assert!(select(&[], false, false).is_empty());
}

#[test]
fn conditional_patterns() {
    let p = select(&["rocprofiler-systems"], false, false);
    assert!(!p.contains(&"rocprofiler-sdk_dev".into()));
    let p = select(&["rocprofiler-systems"], true, false);
    assert!(p.contains(&"rocprofiler-sdk_dev".into()));
    let p = select(&["prim", "rand", "hipthreads"], false, false);
    assert!(p.contains(&"prim_dev".into()) && p.contains(&"rand_dev".into()));
    assert!(!select(&["hipthreads"], false, false).contains(&"prim_dev".into()));
    // Only a test archive, even without --tests.
    let p = select(&["rocprofiler-systems-examples"], false, false);
    assert_eq!(p.last().unwrap(), "rocprofiler-systems-examples_test");
    // Names repeat when two components share one, as in the reference.
    let p = select(&["rocshmem", "mpi"], false, false);
    assert_eq!(p.iter().filter(|x| *x == "openmpi_lib").count(), 2);
}
