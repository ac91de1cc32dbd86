//! `upload_python_packages`: uploads built wheels and sdists with the pages pip reads, a
//! `--find-links` page (`index.html`) and a PEP 503 simple index (`simple/`), and exports the
//! page's URL for later jobs (spec §14, delta §6).
//!
//! Every wheel is checked before anything is uploaded ([`wheel`]). The packages go up first
//! and the pages last, so a client never reads a page that links a file not there yet; every
//! link carries the file's `#sha256=` digest, which pip verifies. The pages list what is
//! stored in the destination, and are written so that jobs publishing into the same place at
//! the same time keep each other's packages ([`publish`]).

pub mod publish;
pub mod wheel;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use file_tree::FileError;
use storage_backend::{StorageBackend, TransferOptions};
use storage_location::{StorageLocation, encode_key};
use workflow_outputs::{Platform, WorkflowOutputRoot};

use crate::uploads::shown;
use crate::{RunRequest, resolve_run_root};
use publish::{PageDir, Publisher};

/// The name of the pages pip reads.
pub const INDEX_HTML: &str = "index.html";
/// The directory of the PEP 503 simple index beside each `index.html`.
pub const SIMPLE_DIR: &str = "simple";

/// What to do, after flags and environment are resolved.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The packages directory (its `dist/` subdirectory is used when there is one).
    pub input_packages_dir: PathBuf,
    /// The artifact group (single-arch).
    pub artifact_group: String,
    /// The workflow run id.
    pub run_id: String,
    /// A bucket instead of the one the run resolves to.
    pub bucket: Option<String>,
    /// Multi-arch layout: no group in the path; per-family pages or none.
    pub multiarch: bool,
    /// Local staging directory instead of S3.
    pub output_dir: Option<PathBuf>,
    /// Only check that the destination is reachable and writable.
    pub preflight: bool,
    /// Transfer options (dry run, overwrite, concurrency).
    pub options: TransferOptions,
    /// No progress bars.
    pub quiet: bool,
}

/// How the dist directory is laid out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    /// Single-arch: one page for the top-level packages.
    Single,
    /// Multi-arch with a directory per GPU family: a page in each, linking the family's
    /// packages and the generic ones above it.
    PerFamily(Vec<String>),
    /// Multi-arch, flat (kpack-split): no top-level page, the bucket's own indexer lists the
    /// prefix; family pages stored by earlier uploads are rewritten to list the new packages.
    Flat,
}

/// One package a page links: its file name and its path relative to the page's directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The file name.
    pub name: String,
    /// The path from the page's directory (`x.whl`, `../x.whl`).
    pub href: String,
    /// Its SHA-256 (lowercase hex); empty when unknown (the link then has no digest).
    pub sha256: String,
}

#[expect(
    clippy::case_sensitive_file_extension_comparisons,
    reason = "the reference's globs `*.whl`, `*.tar.gz` are case-sensitive"
)]
fn is_package(name: &str) -> bool {
    name.ends_with(".whl") || name.ends_with(".tar.gz")
}

/// The regular files of `dir` (not below it) whose names are packages, sorted by name.
fn packages_in(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut found: Vec<PathBuf> = file_tree::list(dir)?
        .into_iter()
        .filter(|e| e.is_file && !e.is_symlink && is_package(e.name()))
        .map(|e| e.path)
        .collect();
    found.sort();
    Ok(found)
}

/// The GPU-family directories of `dist`: its subdirectories, dot-directories (staging areas
/// such as `.kpack_staging`) left out, sorted.
pub fn family_dirs(dist: &Path) -> anyhow::Result<Vec<String>> {
    let mut names: Vec<String> = file_tree::list(dist)?
        .into_iter()
        .filter(|e| e.is_dir && !e.is_symlink && !e.name().starts_with('.'))
        .map(|e| e.name().to_owned())
        .collect();
    names.sort();
    Ok(names)
}

/// The project name of a wheel or sdist file name, normalized as PEP 503 says (lowercase,
/// runs of `-`, `_`, `.` as one `-`); `None` for a name that is neither.
pub fn project_name(file_name: &str) -> Option<String> {
    let raw = if let Some(stem) = file_name.strip_suffix(".whl") {
        stem.split('-').next()?
    } else {
        file_name.strip_suffix(".tar.gz")?.rsplit_once('-')?.0
    };
    if raw.is_empty() {
        return None;
    }
    Some(wheel::canonical_name(raw))
}

fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn page(title: &str, anchors: impl IntoIterator<Item = (String, String)>) -> String {
    let title = html_escape(title);
    let mut html = format!(
        "<!DOCTYPE html>\n<html>\n<head>\n  <meta charset=\"utf-8\">\n  <title>{title}</title>\n</head>\n<body>\n  <h1>{title}</h1>\n"
    );
    for (href, text) in anchors {
        let _ = writeln!(
            html,
            "  <a href=\"{}\">{}</a><br>",
            html_escape(&href),
            html_escape(&text)
        );
    }
    html.push_str("</body>\n</html>\n");
    html
}

fn anchor(prefix: &str, link: &Link) -> (String, String) {
    let digest = if link.sha256.is_empty() {
        String::new()
    } else {
        format!("#sha256={}", link.sha256)
    };
    (
        format!("{prefix}{}{digest}", encode_key(&link.href)),
        link.name.clone(),
    )
}

/// The pages of one directory, as (path relative to that directory, contents): the
/// `--find-links` page `index.html`, and the simple index `simple/index.html` with one
/// `simple/{project}/index.html` per project. `links` are in page order.
pub fn pages(title: &str, links: &[Link]) -> Vec<(String, String)> {
    let mut out = vec![(
        INDEX_HTML.to_owned(),
        page(title, links.iter().map(|l| anchor("", l))),
    )];
    let mut projects: BTreeMap<String, Vec<&Link>> = BTreeMap::new();
    for link in links {
        if let Some(project) = project_name(&link.name) {
            projects.entry(project).or_default().push(link);
        }
    }
    out.push((
        format!("{SIMPLE_DIR}/{INDEX_HTML}"),
        page(
            &format!("Simple index: {title}"),
            projects.keys().map(|p| (format!("{p}/"), p.clone())),
        ),
    ));
    for (project, links) in &projects {
        out.push((
            format!("{SIMPLE_DIR}/{project}/{INDEX_HTML}"),
            page(
                &format!("Links for {project}"),
                links.iter().map(|l| anchor("../../", l)),
            ),
        ));
    }
    out
}

/// The link to the local file `path`, with its SHA-256.
async fn link(path: &Path) -> anyhow::Result<Link> {
    let name = path
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    Ok(Link {
        href: name.clone(),
        name,
        sha256: storage_backend::sha256_file(path).await?,
    })
}

/// Writes `contents` at `path` through a temporary file renamed into place.
fn write_atomically(path: &Path, contents: &str) -> anyhow::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs_err::create_dir_all(dir).map_err(|e| FileError::write(dir, e))?;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let mut tmp = file_tree::temp_file_in(dir, &name).map_err(|e| FileError::write(dir, e))?;
    tmp.write_all(contents.as_bytes())
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| FileError::write(path, e))?;
    tmp.persist(path)
        .map_err(|e| FileError::write(path, e.error))?;
    Ok(())
}

/// The dist directory: `{packages}/dist` when it is a directory, else `packages`.
pub fn dist_dir(packages: &Path) -> PathBuf {
    let sub = packages.join("dist");
    if sub.is_dir() {
        sub
    } else {
        packages.to_path_buf()
    }
}

/// Files and where they go.
type Uploads = Vec<(PathBuf, StorageLocation)>;

/// Whether `rel` (a path below dist) is one of the pages this tool writes in a page directory
/// of `dirs`: its `index.html` or anything below its `simple/`. Such files (left by an earlier
/// run, say) are not uploaded: the pages are made from what is stored.
fn is_page_path(rel: &str, dirs: &[PageDir]) -> bool {
    dirs.iter().any(|dir| {
        let own = if dir.rel.is_empty() {
            Some(rel)
        } else {
            rel.strip_prefix(&dir.rel).and_then(|r| r.strip_prefix('/'))
        };
        own.is_some_and(|r| r == INDEX_HTML || r.starts_with(&format!("{SIMPLE_DIR}/")))
    })
}

/// The files to upload below `dist`, each `(file, destination)`: everything but the pages of
/// `dirs`, symlinks, and anything below a dot-directory (or named with a leading dot).
fn upload_list(
    dist: &Path,
    location: &StorageLocation,
    dirs: &[PageDir],
) -> anyhow::Result<Uploads> {
    let entries = storage_backend::patterns::walk(dist)
        .with_context(|| format!("Failed to list `{}`", dist.display()))?;
    let mut files = Vec::new();
    for e in entries {
        if !e.is_file || e.is_symlink || e.components.iter().any(|c| c.starts_with('.')) {
            continue;
        }
        let rel = e.relative();
        if !is_page_path(&rel, dirs) {
            files.push((e.path.clone(), location.join(&rel)));
        }
    }
    Ok(files)
}

/// Checks every wheel among `files` (see [`wheel::check`]); the error names each bad one by its
/// path below `dist`.
fn check_wheels(dist: &Path, files: &Uploads) -> anyhow::Result<()> {
    let mut bad = Vec::new();
    for (path, _) in files {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if !name.ends_with(".whl") {
            continue;
        }
        if let Err(e) = wheel::check(path) {
            let rel = path.strip_prefix(dist).unwrap_or(path);
            bad.push(format!("`{}`: {:#}", rel.display(), anyhow::Error::new(e)));
        }
    }
    if !bad.is_empty() {
        bail!(
            "Not a valid wheel, nothing was uploaded:\n  {}",
            bad.join("\n  ")
        );
    }
    Ok(())
}

/// The step summary (spec §14 variants A, B, C).
pub fn summary(location: &StorageLocation, layout: &Layout, platform: Platform) -> String {
    let lc = if platform == Platform::Windows {
        "^"
    } else {
        "\\"
    };
    let fence = "```";
    let base = location.https_url();
    let index_url = format!("{base}/{INDEX_HTML}");
    match layout {
        Layout::Single => format!(
            "[ROCm Python packages]({index_url})\n{fence}bash\npip install rocm[libraries,devel] --pre {lc}\n    --find-links={index_url}\n{fence}\n"
        ),
        Layout::Flat => format!(
            "[ROCm Python packages (kpack-split)]({index_url})\nReplace `<YOUR_TARGET>` with your GPU target (e.g. `gfx942`, `gfx1201`):\n{fence}bash\npip install rocm[libraries,devel,device-<YOUR_TARGET>] --pre {lc}\n    --find-links={index_url}\n{fence}\n"
        ),
        Layout::PerFamily(families) => {
            let links: Vec<String> = families
                .iter()
                .map(|f| format!("- [{f}]({base}/{f}/{INDEX_HTML})"))
                .collect();
            let installs: Vec<String> = families
                .iter()
                .map(|f| format!("{fence}bash\npip install rocm[libraries,devel] --pre {lc}\n    --find-links={base}/{f}/{INDEX_HTML}\n{fence}"))
                .collect();
            format!(
                "ROCm Python packages (multi-arch build)\n\nPer-family indexes:\n{}\n\n{}\n",
                links.join("\n"),
                installs.join("\n\n")
            )
        }
    }
}

fn banner(out: &mut dyn Write, title: &str) -> std::io::Result<()> {
    writeln!(out, "{title}")?;
    writeln!(out, "{}", "-".repeat(title.len()))
}

/// The output root: the named bucket (no fork prefix, host platform), else the run's.
fn output_root(
    plan: &Plan,
    lookup: &dyn Fn(&str) -> Option<String>,
    log: &mut dyn Write,
) -> anyhow::Result<(WorkflowOutputRoot, String)> {
    if let Some(bucket) = &plan.bucket {
        let root = WorkflowOutputRoot::new(bucket.clone(), "", &plan.run_id, Platform::host())?;
        return Ok((root, storage_backend::DEFAULT_REGION.to_owned()));
    }
    let request = RunRequest {
        run_id: plan.run_id.clone(),
        platform: Platform::host(),
        repository: None,
        release_type: None,
        lookup_workflow_run: false,
    };
    let (root, selection) = resolve_run_root(&request, lookup, log)?;
    Ok((root, selection.config().region().to_owned()))
}

/// The reference's opening lines: directories, group, run, platform, mode.
fn print_plan(
    plan: &Plan,
    packages: &Path,
    dist: &Path,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    writeln!(out, "[INFO] Packages directory  : {}", packages.display())?;
    writeln!(out, "[INFO] Dist [sub]directory : {}", dist.display())?;
    writeln!(out, "[INFO] Artifact group      : {}", plan.artifact_group)?;
    writeln!(out, "[INFO] Run ID              : {}", plan.run_id)?;
    writeln!(out, "[INFO] Platform            : {}", Platform::host())?;
    match (&plan.output_dir, plan.options.dry_run) {
        (_, true) => writeln!(out, "[INFO] Mode              : DRY RUN"),
        (Some(dir), false) => writeln!(
            out,
            "[INFO] Mode              : Local output to {}",
            dir.display()
        ),
        (None, false) => writeln!(out, "[INFO] Mode              : S3 upload"),
    }
}

/// Runs the whole job: progress to `out`, the bucket resolution to `log`.
pub async fn run(
    plan: &Plan,
    lookup: &dyn Fn(&str) -> Option<String>,
    out: &mut dyn Write,
    log: &mut dyn Write,
) -> anyhow::Result<()> {
    let packages =
        crate::uploads::existing_dir(&plan.input_packages_dir, "Packages root directory")?;
    let dist = dist_dir(&packages);
    let dry_run = plan.options.dry_run;
    print_plan(plan, &packages, &dist, out)?;

    let (root, region) = output_root(plan, lookup, log)?;
    let location = root.python_packages(if plan.multiarch {
        ""
    } else {
        &plan.artifact_group
    });
    let backend = crate::uploads::backend(
        plan.output_dir.as_deref(),
        plan.options,
        &region,
        plan.quiet,
        lookup,
    )
    .await?;
    if plan.preflight {
        return crate::uploads::preflight(&backend, &location, plan.output_dir.as_deref(), out)
            .await;
    }

    writeln!(out)?;
    banner(out, "Generating index.html")?;
    writeln!(
        out,
        "[INFO] Multi-arch indexing: {}",
        python_bool(plan.multiarch)
    )?;
    let families = if plan.multiarch {
        family_dirs(&dist)?
    } else {
        Vec::new()
    };
    let layout = match (plan.multiarch, families.is_empty()) {
        (false, _) => Layout::Single,
        (true, true) => Layout::Flat,
        (true, false) => Layout::PerFamily(families),
    };
    writeln!(
        out,
        "{}",
        match layout {
            Layout::Single => "[INFO] Single-arch mode: one index for the top-level packages",
            Layout::Flat =>
                "[INFO] kpack-split flat mode: skipping client-side index generation (server-side indexing handles it)",
            Layout::PerFamily(_) => "[INFO] Multi-arch legacy mode: generating per-family indexes",
        }
    )?;
    let mut count = packages_in(&dist)?.len();
    if let Layout::PerFamily(families) = &layout {
        for family in families {
            count += packages_in(&dist.join(family))?.len();
        }
    }
    if count == 0 {
        bail!("No package files found in `{}`", dist.display());
    }
    let local_dirs = page_dirs(&dist, &layout, &[]);
    let files = upload_list(&dist, &location, &local_dirs)?;
    {
        // Each wheel's zip directory and METADATA are read: off the async threads.
        let (dist, wheels) = (dist.clone(), files.clone());
        storage_backend::blocking(move || check_wheels(&dist, &wheels)).await?;
    }
    if dry_run {
        writeln!(
            out,
            "[DRY RUN] Would generate index in {} (multiarch={})",
            dist.display(),
            python_bool(plan.multiarch)
        )?;
    }

    writeln!(out)?;
    banner(out, "Uploading packages")?;
    let mut publisher = Publisher::new(&backend, &location, &dist);
    let uploaded = upload(&backend, &dist, &location, files, plan, out).await?;
    // Families published earlier list the packages directly in the location too.
    let stored_families = if plan.multiarch {
        publisher.published_families().await?
    } else {
        Vec::new()
    };
    let mut written = 0;
    for dir in page_dirs(&dist, &layout, &stored_families) {
        written += publisher.publish(&dir, out).await?;
    }
    writeln!(
        out,
        "[INFO] Uploaded {} files ({} unchanged)",
        uploaded.transferred + if dry_run { 0 } else { written },
        uploaded.skipped
    )?;

    if plan.output_dir.is_none() {
        set_outputs(&location, &layout, dry_run, lookup, out)?;
    }
    writeln!(out)?;
    writeln!(out, "[INFO] Done!")?;
    Ok(())
}

/// The directories that get pages: the top of dist (single-arch), or each GPU family of the
/// layout and of `published` (families already stored, whose pages also list the packages
/// directly in the location), sorted.
fn page_dirs(dist: &Path, layout: &Layout, published: &[String]) -> Vec<PageDir> {
    let mut families: Vec<String> = published.to_vec();
    match layout {
        Layout::Single => {
            return vec![PageDir {
                rel: String::new(),
                title: dist
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned(),
                family: false,
            }];
        }
        Layout::Flat => {}
        Layout::PerFamily(local) => families.extend(local.iter().cloned()),
    }
    families.sort();
    families.dedup();
    families
        .into_iter()
        .map(|family| PageDir {
            title: format!("ROCm Python Packages - {family}"),
            rel: family,
            family: true,
        })
        .collect()
}

/// Sets the step outputs and writes the job summary, printing what the reference prints (a dry
/// run prints them instead).
fn set_outputs(
    location: &StorageLocation,
    layout: &Layout,
    dry_run: bool,
    lookup: &dyn Fn(&str) -> Option<String>,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let base = location.https_url();
    let (index_url, kpack_split) = match layout {
        Layout::PerFamily(_) => {
            writeln!(
                out,
                "[INFO] Multi-arch legacy URL (tests append /{{family}}/index.html): {base}"
            )?;
            (base, "false")
        }
        Layout::Flat => {
            let url = format!("{base}/{INDEX_HTML}");
            writeln!(out, "[INFO] kpack-split flat URL: {url}")?;
            (url, "true")
        }
        Layout::Single => {
            let url = format!("{base}/{INDEX_HTML}");
            writeln!(out, "[INFO] Single-arch index URL: {url}")?;
            (url, "false")
        }
    };
    let outputs = [
        ("package_find_links_url", index_url.as_str()),
        ("kpack_split", kpack_split),
    ];
    let text = summary(location, layout, Platform::host());
    banner(out, "Set github actions output")?;
    if dry_run {
        let json = github_actions::outputs_json(&outputs);
        writeln!(out, "[DRY RUN] Would set github output:\n{json}")?;
    } else {
        let (text, written) = github_actions::set_outputs_reporting(&outputs, lookup)?;
        write!(out, "{text}")?;
        if !written {
            writeln!(out, "{}", github_actions::OUTPUTS_NOT_SET_WARNING)?;
        }
    }
    banner(out, "Write github actions build summary")?;
    if dry_run {
        writeln!(out, "[DRY RUN] Would write the job summary:\n{text}")?;
    } else {
        writeln!(out, "Writing job summary:\n{text}")?;
        if github_actions::append_step_summary_with(&text, lookup)?
            == github_actions::SummaryOutcome::NotConfigured
        {
            writeln!(
                out,
                "  Warning: GITHUB_STEP_SUMMARY env var not set, can't write job summary"
            )?;
        }
    }
    Ok(())
}

fn python_bool(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}

/// Uploads the packages (everything in `files`); the pages are written after.
async fn upload(
    backend: &StorageBackend,
    dist: &Path,
    location: &StorageLocation,
    files: Uploads,
    plan: &Plan,
    out: &mut dyn Write,
) -> anyhow::Result<storage_backend::TransferReport> {
    let top = packages_in(dist)?;
    writeln!(
        out,
        "[INFO] Found {} top-level package files in {}:",
        top.len(),
        dist.display()
    )?;
    let mut names: Vec<String> = top
        .iter()
        .map(|p| {
            p.file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    for name in &names {
        writeln!(out, "  - {name}")?;
    }
    writeln!(
        out,
        "[INFO] Uploading {} total files to {}:",
        files.len(),
        shown(plan.output_dir.as_deref(), location)
    )?;
    for (_, to) in &files {
        let rel = to
            .relative_path()
            .strip_prefix(location.relative_path())
            .unwrap_or(to.relative_path());
        writeln!(out, "  {}", rel.trim_start_matches('/'))?;
    }
    backend
        .upload_files(files)
        .await
        .context("Failed to upload the packages; no index was uploaded")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_names() {
        for (file, project) in [
            (
                "rocm_sdk_core-7.2.0-py3-none-linux_x86_64.whl",
                Some("rocm-sdk-core"),
            ),
            ("rocm-7.14.0.dev0+13caf791.tar.gz", Some("rocm")),
            ("Foo.Bar__baz-1.0.tar.gz", Some("foo-bar-baz")),
            (
                "torch-2.7.0+rocm7.0-cp312-cp312-linux_x86_64.whl",
                Some("torch"),
            ),
            ("notes.txt", None),
            ("-1.0.tar.gz", None),
        ] {
            assert_eq!(project_name(file).as_deref(), project, "{file}");
        }
    }

    #[test]
    fn pages_link_with_digests() {
        let links = [
            Link {
                name: "a_b-1.0+x-py3-none-any.whl".into(),
                href: "a_b-1.0+x-py3-none-any.whl".into(),
                sha256: "00".into(),
            },
            Link {
                name: "core-1.0.tar.gz".into(),
                href: "../core-1.0.tar.gz".into(),
                sha256: "11".into(),
            },
        ];
        let pages = pages("T <x>", &links);
        let paths: Vec<&str> = pages.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            [
                "index.html",
                "simple/index.html",
                "simple/a-b/index.html",
                "simple/core/index.html"
            ]
        );
        assert_eq!(
            pages[0].1,
            "<!DOCTYPE html>\n<html>\n<head>\n  <meta charset=\"utf-8\">\n  <title>T &lt;x&gt;</title>\n</head>\n<body>\n  <h1>T &lt;x&gt;</h1>\n  <a href=\"a_b-1.0%2Bx-py3-none-any.whl#sha256=00\">a_b-1.0+x-py3-none-any.whl</a><br>\n  <a href=\"../core-1.0.tar.gz#sha256=11\">core-1.0.tar.gz</a><br>\n</body>\n</html>\n"
        );
        assert!(pages[1].1.contains("<a href=\"a-b/\">a-b</a><br>"));
        assert!(
            pages[3]
                .1
                .contains("<a href=\"../../../core-1.0.tar.gz#sha256=11\">core-1.0.tar.gz</a>")
        );
    }

    #[test]
    fn summaries() {
        let loc = StorageLocation::new("b", "1-linux/python");
        assert_eq!(
            summary(&loc, &Layout::Single, Platform::Linux),
            "[ROCm Python packages](https://b.s3.amazonaws.com/1-linux/python/index.html)\n```bash\npip install rocm[libraries,devel] --pre \\\n    --find-links=https://b.s3.amazonaws.com/1-linux/python/index.html\n```\n"
        );
        let per = summary(
            &loc,
            &Layout::PerFamily(vec!["f1".into(), "f2".into()]),
            Platform::Windows,
        );
        assert_eq!(
            per,
            "ROCm Python packages (multi-arch build)\n\nPer-family indexes:\n- [f1](https://b.s3.amazonaws.com/1-linux/python/f1/index.html)\n- [f2](https://b.s3.amazonaws.com/1-linux/python/f2/index.html)\n\n```bash\npip install rocm[libraries,devel] --pre ^\n    --find-links=https://b.s3.amazonaws.com/1-linux/python/f1/index.html\n```\n\n```bash\npip install rocm[libraries,devel] --pre ^\n    --find-links=https://b.s3.amazonaws.com/1-linux/python/f2/index.html\n```\n"
        );
        assert!(summary(&loc, &Layout::Flat, Platform::Linux).starts_with(
            "[ROCm Python packages (kpack-split)](https://b.s3.amazonaws.com/1-linux/python/index.html)\nReplace `<YOUR_TARGET>`"
        ));
    }
}
