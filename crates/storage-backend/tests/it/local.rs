use std::path::Path;

use storage_backend::{Error, Overwrite, StorageBackend, StorageLocation, TransferOptions};

use crate::{Captured, files_below, write_tree};

const TREE: &[(&str, &str)] = &[
    ("file1.tar.xz", "xz"),
    ("file1.tar.xz.sha256sum", "sum"),
    ("file2.log", "log"),
    ("sub/nested.html", "html"),
    ("sub/deep/deep.txt", "txt"),
];

fn backend(staging: &Path) -> StorageBackend {
    StorageBackend::local(staging, TransferOptions::default())
}

fn loc(key: &str) -> StorageLocation {
    StorageLocation::new("bucket", key)
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

// Spec §18.5: upload_directory on a local staging dir.
#[tokio::test]
async fn upload_directory_vectors() {
    type Case<'a> = (
        &'a [&'a str],
        &'a [&'a str],
        usize,
        &'a [&'a str],
        &'a [&'a str],
    );
    let cases: &[Case<'_>] = &[
        (
            &[],
            &[],
            5,
            &[
                "file1.tar.xz",
                "file1.tar.xz.sha256sum",
                "file2.log",
                "sub/nested.html",
            ],
            &[],
        ),
        (
            &["*.tar.xz*"],
            &[],
            2,
            &["file1.tar.xz", "file1.tar.xz.sha256sum"],
            &["file2.log"],
        ),
        (
            &[],
            &["sub/*"],
            4,
            &["sub/deep/deep.txt"],
            &["sub/nested.html"],
        ),
        (
            &[],
            &["sub/**/*"],
            3,
            &[],
            &["sub/nested.html", "sub/deep/deep.txt"],
        ),
        (&[], &["*.log"], 4, &["sub/nested.html"], &["file2.log"]),
    ];
    for (include, exclude, count, present, absent) in cases {
        let src = tempfile::tempdir().unwrap();
        write_tree(src.path(), TREE);
        let staging = tempfile::tempdir().unwrap();
        let report = backend(staging.path())
            .upload_directory(
                src.path(),
                &loc("run-1"),
                &strings(include),
                &strings(exclude),
            )
            .await
            .unwrap();
        assert_eq!(report.transferred, *count, "{include:?} {exclude:?}");
        for p in *present {
            assert!(
                staging.path().join("run-1").join(p).is_file(),
                "{p} missing"
            );
        }
        for p in *absent {
            assert!(
                !staging.path().join("run-1").join(p).exists(),
                "{p} present"
            );
        }
    }
}

#[tokio::test]
async fn upload_directory_details() {
    let src = tempfile::tempdir().unwrap();
    write_tree(src.path(), TREE);
    let staging = tempfile::tempdir().unwrap();
    backend(staging.path())
        .upload_directory(src.path(), &loc("run-1/logs/gfx94X"), &[], &[])
        .await
        .unwrap();
    assert!(
        staging
            .path()
            .join("run-1/logs/gfx94X/sub/nested.html")
            .is_file()
    );

    // Symlinked files are skipped (Windows makes symlinks only with a privilege).
    #[cfg(unix)]
    {
        let src = tempfile::tempdir().unwrap();
        write_tree(src.path(), &[("real.tar.xz", "r")]);
        std::os::unix::fs::symlink("real.tar.xz", src.path().join("link.tar.xz")).unwrap();
        let staging = tempfile::tempdir().unwrap();
        let report = backend(staging.path())
            .upload_directory(src.path(), &loc("run-1"), &[], &[])
            .await
            .unwrap();
        assert_eq!(report.transferred, 1);
        assert_eq!(files_below(staging.path()), ["run-1/real.tar.xz"]);
    }

    // Missing source directory.
    let err = backend(staging.path())
        .upload_directory(Path::new("/nonexistent"), &loc("run-1"), &[], &[])
        .await
        .unwrap_err();
    assert!(matches!(err, Error::MissingSourceDir(_)));
    assert_eq!(err.to_string(), "Source directory `/nonexistent` not found");

    // Empty directory.
    let empty = tempfile::tempdir().unwrap();
    let report = backend(staging.path())
        .upload_directory(empty.path(), &loc("run-2"), &[], &[])
        .await
        .unwrap();
    assert_eq!(report.total(), 0);
}

#[tokio::test]
async fn dry_run_prints_and_writes_nothing() {
    let src = tempfile::tempdir().unwrap();
    write_tree(src.path(), TREE);
    let staging = tempfile::tempdir().unwrap();
    let sink = Captured::default();
    let dry = StorageBackend::local(staging.path(), {
        let mut transfer_options = TransferOptions::default();
        transfer_options.dry_run = true;
        transfer_options
    })
    .with_dry_run_sink(Box::new(sink.clone()));
    let report = dry
        .upload_directory(src.path(), &loc("run-1"), &[], &[])
        .await
        .unwrap();
    assert_eq!(report.transferred, 5);
    assert!(!staging.path().join("run-1").exists());
    let text = sink.text();
    assert_eq!(text.lines().count(), 5, "{text}");
    assert!(text.lines().all(|l| l.starts_with("[DRY RUN] ")));
    assert!(text.contains(&format!(
        "[DRY RUN] {} -> {}",
        src.path().join("file2.log").display(),
        staging.path().join("run-1").join("file2.log").display()
    )));

    write_tree(staging.path(), &[("run-1/a.txt", "a")]);
    dry.copy_file(&loc("run-1/a.txt"), &loc("x/a.txt"))
        .await
        .unwrap();
    assert!(!staging.path().join("x").exists());
    assert!(sink.text().contains(" copy "));
}

// Spec §18.5: local single-file operations.
#[tokio::test]
async fn single_file_operations() {
    let staging = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    write_tree(
        src.path(),
        &[("hello.txt", "content"), ("a.txt", "aaa"), ("b.txt", "bbb")],
    );
    let b = backend(staging.path());
    b.upload_file(&src.path().join("hello.txt"), &loc("run-1/hello.txt"))
        .await
        .unwrap();
    assert_eq!(
        fs_err::read_to_string(staging.path().join("run-1/hello.txt")).unwrap(),
        "content"
    );
    b.upload_file(
        &src.path().join("hello.txt"),
        &loc("run-1/deep/nested/data.json"),
    )
    .await
    .unwrap();
    assert!(staging.path().join("run-1/deep/nested/data.json").is_file());

    write_tree(
        staging.path(),
        &[("run-1/file.whl", "wheel-data"), ("a/b.txt", "b")],
    );
    b.copy_file(&loc("run-1/file.whl"), &loc("release/file.whl"))
        .await
        .unwrap();
    assert_eq!(
        fs_err::read_to_string(staging.path().join("release/file.whl")).unwrap(),
        "wheel-data"
    );
    b.copy_file(&loc("a/b.txt"), &loc("x/y/z/b.txt"))
        .await
        .unwrap();
    assert!(staging.path().join("x/y/z/b.txt").is_file());

    let report = b
        .upload_files(vec![
            (src.path().join("a.txt"), loc("run-1/a.txt")),
            (src.path().join("b.txt"), loc("run-1/b.txt")),
        ])
        .await
        .unwrap();
    assert_eq!(report.transferred, 2);
    assert_eq!(
        fs_err::read_to_string(staging.path().join("run-1/b.txt")).unwrap(),
        "bbb"
    );
    assert_eq!(b.upload_files(vec![]).await.unwrap().total(), 0);

    // Modes (Unix has them) and mtimes are kept; nothing temporary is left.
    let exe = src.path().join("tool.sh");
    fs_err::write(&exe, "#!/bin/sh\n").unwrap();
    #[cfg(unix)]
    fs_err::set_permissions(&exe, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    b.upload_file(&exe, &loc("bin/tool.sh")).await.unwrap();
    let meta = fs_err::metadata(staging.path().join("bin/tool.sh")).unwrap();
    #[cfg(unix)]
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o777,
        0o755
    );
    assert_eq!(
        meta.modified().unwrap(),
        fs_err::metadata(&exe).unwrap().modified().unwrap()
    );
    assert!(
        !files_below(staging.path())
            .iter()
            .any(|f| f.contains(".partial"))
    );
}

#[tokio::test]
async fn failures_are_all_reported() {
    let staging = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    write_tree(src.path(), &[("good.log", "g")]);
    let err = backend(staging.path())
        .upload_files(vec![
            (src.path().join("good.log"), loc("run-1/good.log")),
            (src.path().join("bad.log"), loc("run-1/bad.log")),
            (src.path().join("worse.log"), loc("run-1/worse.log")),
        ])
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("Failed to upload 2/3 files:"), "{text}");
    // Named where they would have been staged, not as S3 keys.
    for name in ["bad.log", "worse.log"] {
        let staged = staging.path().join("run-1").join(name);
        assert!(
            text.contains(&format!("{}: Source file", staged.display())),
            "{text}"
        );
    }
    assert!(!text.contains("s3://"), "{text}");
    // The good one still made it.
    assert!(staging.path().join("run-1/good.log").is_file());
}

#[tokio::test]
async fn overwrite_modes() {
    let staging = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    write_tree(src.path(), &[("a.txt", "new")]);
    write_tree(staging.path(), &[("run/a.txt", "old")]);
    let with = |overwrite| {
        StorageBackend::local(staging.path(), {
            let mut transfer_options = TransferOptions::default();
            transfer_options.overwrite = overwrite;
            transfer_options
        })
    };

    let err = with(Overwrite::Never)
        .upload_files(vec![(src.path().join("a.txt"), loc("run/a.txt"))])
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("already exists and overwriting is disabled"),
        "{err}"
    );
    assert_eq!(
        fs_err::read_to_string(staging.path().join("run/a.txt")).unwrap(),
        "old"
    );

    let report = with(Overwrite::IfDifferent)
        .upload_files(vec![(src.path().join("a.txt"), loc("run/a.txt"))])
        .await
        .unwrap();
    assert_eq!((report.transferred, report.skipped), (1, 0));
    let report = with(Overwrite::IfDifferent)
        .upload_files(vec![(src.path().join("a.txt"), loc("run/a.txt"))])
        .await
        .unwrap();
    assert_eq!((report.transferred, report.skipped), (0, 1));
    assert_eq!(
        fs_err::read_to_string(staging.path().join("run/a.txt")).unwrap(),
        "new"
    );
}

// Spec §18.5: list_files and copy_directory on a local staging dir.
#[tokio::test]
async fn list_and_copy_directory() {
    let staging = tempfile::tempdir().unwrap();
    let b = backend(staging.path());
    write_tree(
        staging.path(),
        &[
            ("run-1/tarballs/a.tar.gz", "tarball-a"),
            ("run-1/tarballs/b.tar.gz", "tarball-b"),
            ("run-1/tarballs/c.log", "c"),
        ],
    );
    let names = |v: Vec<StorageLocation>| {
        v.iter()
            .map(|l| l.relative_path().rsplit('/').next().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(b.list_files(&loc("run-1/tarballs"), &[]).await.unwrap()),
        ["a.tar.gz", "b.tar.gz", "c.log"]
    );
    assert_eq!(
        names(
            b.list_files(&loc("run-1/tarballs"), &strings(&["*.tar.gz"]))
                .await
                .unwrap()
        ),
        ["a.tar.gz", "b.tar.gz"]
    );
    assert!(b.list_files(&loc("missing"), &[]).await.unwrap().is_empty());
    write_tree(
        staging.path(),
        &[("run-1/tarballs/subdir/nested.tar.gz", "n")],
    );
    let all = b
        .list_files(&loc("run-1/tarballs"), &strings(&["*.tar.gz"]))
        .await
        .unwrap();
    assert_eq!(
        all.iter()
            .map(StorageLocation::relative_path)
            .collect::<Vec<_>>(),
        [
            "run-1/tarballs/a.tar.gz",
            "run-1/tarballs/b.tar.gz",
            "run-1/tarballs/subdir/nested.tar.gz"
        ]
    );

    let report = b
        .copy_directory(
            &StorageLocation::new("src-bucket", "run-1/tarballs"),
            &StorageLocation::new("dst-bucket", "v3"),
            &strings(&["*.tar.gz"]),
        )
        .await
        .unwrap();
    assert_eq!(report.transferred, 3);
    assert_eq!(
        fs_err::read_to_string(staging.path().join("v3/a.tar.gz")).unwrap(),
        "tarball-a"
    );
    assert_eq!(
        fs_err::read_to_string(staging.path().join("v3/subdir/nested.tar.gz")).unwrap(),
        "n"
    );
    assert!(!staging.path().join("v3/c.log").exists());

    let empty = b
        .copy_directory(&loc("nothing"), &loc("v4"), &[])
        .await
        .unwrap();
    assert_eq!(empty.total(), 0);
}

// Spec §18.5: the factory.
#[tokio::test]
async fn factory() {
    let staging = tempfile::tempdir().unwrap();
    let options = {
        let mut transfer_options = TransferOptions::default();
        transfer_options.dry_run = true;
        transfer_options.concurrency = 25;
        transfer_options
    };
    let local = StorageBackend::create(Some(staging.path()), options)
        .await
        .unwrap();
    assert!(matches!(local, StorageBackend::Local(_)));
    assert!(local.options().dry_run);
    let s3 = StorageBackend::create(None, {
        let mut transfer_options = TransferOptions::default();
        transfer_options.concurrency = 25;
        transfer_options
    })
    .await
    .unwrap();
    assert!(matches!(s3, StorageBackend::S3(_)));
    assert_eq!(s3.options().concurrency, 25);
    assert!(!s3.options().dry_run);
    assert_eq!(TransferOptions::default().concurrency, 10);
}

#[test]
fn secret_values_of_the_s3_environment() {
    let lookup = |var: &str| match var {
        "AWS_SECRET_ACCESS_KEY" => Some("sekrit".to_owned()),
        "AWS_ENDPOINT_URL" => Some("https://user:pass@minio.example".to_owned()),
        "AWS_REGION" => Some("us-east-2".to_owned()),
        _ => None,
    };
    let secrets = storage_backend::secret_values(&lookup);
    assert_eq!(secrets[0], "sekrit");
    assert!(secrets.iter().any(|s| s == "pass"), "{secrets:?}");
    assert!(
        !secrets.iter().any(|s| s.contains("us-east")),
        "{secrets:?}"
    );
}

#[test]
fn limit_overrides_answer_their_variables() {
    let limits = storage_backend::LimitOverrides {
        connect_timeout: Some(3),
        max_attempts: Some(2),
        ..Default::default()
    };
    let env = limits.over(|var: &str| Some(format!("env:{var}")));
    assert_eq!(env("ROCK_CI_CONNECT_TIMEOUT").as_deref(), Some("3"));
    assert_eq!(env("ROCK_CI_MAX_ATTEMPTS").as_deref(), Some("2"));
    assert_eq!(
        env("ROCK_CI_READ_TIMEOUT").as_deref(),
        Some("env:ROCK_CI_READ_TIMEOUT")
    );
}
