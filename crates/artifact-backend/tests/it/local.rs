//! The local staging-directory backend: the vectors of the reference, sidecars, copies.

use artifact_backend::{ArtifactBackend, Error};
use rock_ci_test_support::sha256_hex as sha;
use workflow_outputs::{Platform, WorkflowOutputRoot};

use crate::{local, names, write};

/// A run with nothing staged lists as empty; a staging directory that is not there is an
/// error naming it, not "no artifacts".
#[tokio::test]
async fn a_missing_staging_directory_is_an_error_naming_it() {
    let t = tempfile::tempdir().unwrap();
    assert!(
        local(t.path(), "1")
            .list_artifacts(None)
            .await
            .unwrap()
            .is_empty()
    );
    let missing = t.path().join("not-made");
    let backend = local(&missing, "1");
    // What a consumer logs: the backend shows where it reads.
    let shown = format!("{backend:?}");
    assert!(
        shown.starts_with("LocalArtifacts {")
            && shown.contains(&format!("{:?}", missing.join("1-linux"))),
        "{shown}"
    );
    let err = backend.list_artifacts(None).await.unwrap_err();
    assert!(
        matches!(&err, Error::MissingStagingDir(p) if *p == missing),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "The local staging directory `{}` does not exist",
            missing.display()
        )
    );
}

#[tokio::test]
async fn local_backend_vectors() {
    let t = tempfile::tempdir().unwrap();
    let r =
        WorkflowOutputRoot::for_local(Some("test-run-123"), Some(Platform::Linux), None).unwrap();
    let b = ArtifactBackend::local(t.path(), r).unwrap();
    let base = t.path().join("test-run-123-linux");
    assert_eq!(b.base_uri(), base.display().to_string());
    assert!(b.list_artifacts(None).await.unwrap().is_empty());
    for f in [
        "blas_lib_gfx94X.tar.zst",
        "blas_dev_gfx94X.tar.xz",
        "fft_lib_generic.tar.zst",
        "blas_lib_gfx94X.tar.zst.sha256sum",
        "README.txt",
    ] {
        write(&base.join(f), b"x");
    }
    write(&base.join("logs/nested_lib_generic.tar.zst"), b"x");
    assert_eq!(
        names(&b.list_artifacts(None).await.unwrap()),
        [
            "blas_dev_gfx94X.tar.xz",
            "blas_lib_gfx94X.tar.zst",
            "fft_lib_generic.tar.zst"
        ]
    );
    assert_eq!(b.list_artifacts(Some("blas")).await.unwrap().len(), 2);
    assert_eq!(
        names(&b.list_artifacts(Some("fft")).await.unwrap()),
        ["fft_lib_generic.tar.zst"]
    );
    assert!(
        b.list_artifacts(Some("nonexistent"))
            .await
            .unwrap()
            .is_empty()
    );

    // Upload with a matching sidecar, then download it back.
    let src = t.path().join("source/test_artifact.tar.xz");
    let content = b"test artifact content xz";
    write(&src, content);
    write(
        &t.path().join("source/test_artifact.tar.xz.sha256sum"),
        format!("{}  test_artifact.tar.xz\n", sha(content)).as_bytes(),
    );
    b.upload_artifact(&src, "test_artifact.tar.xz")
        .await
        .unwrap();
    assert!(b.artifact_exists("test_artifact.tar.xz").await.unwrap());
    assert!(base.join("test_artifact.tar.xz.sha256sum").is_file());
    let dest = t.path().join("dest/downloaded.tar.xz");
    let got = b
        .download_artifact("test_artifact.tar.xz", &dest)
        .await
        .unwrap();
    assert!(got.verified);
    assert_eq!(fs_err::read(&dest).unwrap(), content);
    assert!(
        t.path()
            .join("dest/test_artifact.tar.xz.sha256sum")
            .is_file()
    );

    // Missing things.
    let err = b
        .download_artifact("nonexistent.tar.xz", &t.path().join("dest/n.tar.xz"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound(_)), "{err:?}");
    let err = b
        .upload_artifact(&t.path().join("nope.tar.xz"), "nope.tar.xz")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::MissingSource(_)), "{err:?}");
    assert!(!b.artifact_exists("exists.tar.zst").await.unwrap());
    write(&base.join("exists.tar.zst"), b"");
    assert!(b.artifact_exists("exists.tar.zst").await.unwrap());

    // A sidecar that does not match the source: nothing uploaded.
    let bad = t.path().join("source/bad_lib_generic.tar.zst");
    write(&bad, b"content");
    write(
        &t.path().join("source/bad_lib_generic.tar.zst.sha256sum"),
        format!("{}\n", sha(b"other")).as_bytes(),
    );
    let err = b
        .upload_artifact(&bad, "bad_lib_generic.tar.zst")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::ChecksumMismatch { .. }), "{err:?}");
    assert!(!base.join("bad_lib_generic.tar.zst").exists());
}

#[tokio::test]
async fn local_download_with_bad_sidecar_leaves_nothing() {
    let t = tempfile::tempdir().unwrap();
    let r = WorkflowOutputRoot::for_local(Some("1"), Some(Platform::Linux), None).unwrap();
    let b = ArtifactBackend::local(t.path(), r).unwrap();
    let base = t.path().join("1-linux");
    write(&base.join("a_lib_generic.tar.zst"), b"real bytes");
    write(
        &base.join("a_lib_generic.tar.zst.sha256sum"),
        format!("{}\n", sha(b"other bytes")).as_bytes(),
    );
    let dest = t.path().join("out/a_lib_generic.tar.zst");
    let err = b
        .download_artifact("a_lib_generic.tar.zst", &dest)
        .await
        .unwrap_err();
    assert!(
        err.to_string().starts_with("Checksum mismatch for "),
        "{err}"
    );
    assert!(!dest.exists());
    assert_eq!(fs_err::read_dir(t.path().join("out")).unwrap().count(), 0);
    write(&base.join("b_lib_generic.tar.zst.sha256sum"), b"");
    write(&base.join("b_lib_generic.tar.zst"), b"x");
    let err = b
        .download_artifact("b_lib_generic.tar.zst", &t.path().join("out/b.tar.zst"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidSidecar(_)), "{err:?}");
}

#[tokio::test]
async fn local_copy_between_runs() {
    let t = tempfile::tempdir().unwrap();
    let src = local(t.path(), "source-run");
    let dst = local(t.path(), "dest-run");
    write(
        &t.path().join("source-run-linux/test_lib_generic.tar.zst"),
        b"test content",
    );
    write(
        &t.path()
            .join("source-run-linux/test_lib_generic.tar.zst.sha256sum"),
        b"s\n",
    );
    write(
        &t.path().join("source-run-linux/other_lib_generic.tar.zst"),
        b"other",
    );
    dst.copy_artifact("test_lib_generic.tar.zst", &src)
        .await
        .unwrap();
    assert_eq!(
        fs_err::read(t.path().join("dest-run-linux/test_lib_generic.tar.zst")).unwrap(),
        b"test content"
    );
    assert!(
        t.path()
            .join("dest-run-linux/test_lib_generic.tar.zst.sha256sum")
            .is_file()
    );
    dst.copy_artifact("other_lib_generic.tar.zst", &src)
        .await
        .unwrap();
    assert!(
        !t.path()
            .join("dest-run-linux/other_lib_generic.tar.zst.sha256sum")
            .exists()
    );
    let err = dst
        .copy_artifact("missing.tar.zst", &src)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound(_)), "{err:?}");
}

/// Reading from a staging directory creates nothing in it, not even the run's directory.
#[tokio::test]
async fn reading_creates_nothing() {
    let t = tempfile::tempdir().unwrap();
    let staging = t.path().join("staging");
    let b = local(&staging, "42");
    assert!(matches!(
        b.list_artifacts(None).await,
        Err(Error::MissingStagingDir(_))
    ));
    assert!(!b.artifact_exists("core_lib_generic.tar.zst").await.unwrap());
    let err = b
        .download_artifact("core_lib_generic.tar.zst", &t.path().join("out/a.tar.zst"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound(_)), "{err:?}");
    assert!(!staging.exists(), "reading created {}", staging.display());
}

/// A staging directory has no object metadata to carry an archive's digest, so an upload
/// writes the sidecar before the archive appears: one stopped in between never leaves an
/// archive without its sidecar, and a fetch refuses an archive with neither unless told to
/// accept it unverified.
#[tokio::test]
async fn an_archive_never_lands_without_its_sidecar() {
    let t = tempfile::tempdir().unwrap();
    let b = local(t.path(), "61");
    let base = t.path().join("61-linux");
    let src = t.path().join("src/x_lib_generic.tar.zst");
    write(&src, b"archive bytes");
    // The sidecar cannot be written (a directory is in its way): the upload fails and no
    // archive appears.
    fs_err::create_dir_all(base.join("x_lib_generic.tar.zst.sha256sum/in-the-way")).unwrap();
    b.upload_artifact(&src, "x_lib_generic.tar.zst")
        .await
        .unwrap_err();
    assert!(!base.join("x_lib_generic.tar.zst").exists());
    fs_err::remove_dir_all(base.join("x_lib_generic.tar.zst.sha256sum")).unwrap();
    b.upload_artifact(&src, "x_lib_generic.tar.zst")
        .await
        .unwrap();
    assert!(base.join("x_lib_generic.tar.zst.sha256sum").is_file());

    // An archive with neither sidecar nor recorded digest is refused, named, and nothing lands.
    write(&base.join("y_lib_generic.tar.zst"), b"unverifiable");
    let dest = t.path().join("out/y.tar.zst");
    let err = b
        .download_artifact("y_lib_generic.tar.zst", &dest)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Unverifiable(_)), "{err}");
    assert!(err.to_string().contains("y_lib_generic.tar.zst"), "{err}");
    assert!(!dest.exists());
    let got = b
        .clone()
        .allow_unverified(true)
        .download_artifact("y_lib_generic.tar.zst", &dest)
        .await
        .unwrap();
    assert!(!got.verified);
    // A missing archive is still "not found", not "unverifiable".
    let err = b
        .download_artifact("z_lib_generic.tar.zst", &dest)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound(_)), "{err}");
}
