//! Publishing built wheels and sdists with the pages pip reads, a `--find-links` page
//! (`index.html`) and a PEP 503 simple index (`simple/`) ([`crate::pep503`]).
//!
//! Every wheel is checked before anything is uploaded ([`crate::wheel`]). The packages go up
//! first and the pages last, so a client never reads a page that links a file not there yet;
//! every link carries the file's `#sha256=` digest, which pip verifies. The pages list what is
//! stored in the destination, and are written so that jobs publishing into the same place at
//! the same time keep each other's packages ([`mod@publish`]).

pub mod publish;

use std::io::Write;
use std::path::{Path, PathBuf};

use storage_backend::StorageBackend;
use storage_location::StorageLocation;
use workflow_outputs::Platform;

use crate::error::say;
use crate::pep503::{INDEX_HTML, Link, SIMPLE_DIR, is_package};
use crate::{Error, wheel};
use publish::{PageDir, Publisher};

/// What to publish, after flags and environment are resolved.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The packages directory, checked to exist (its `dist/` subdirectory is used when there
    /// is one).
    pub packages_dir: PathBuf,
    /// The artifact group (single-arch).
    pub artifact_group: String,
    /// The workflow run id.
    pub run_id: String,
    /// Multi-arch layout: no group in the path; per-family pages or none.
    pub multiarch: bool,
    /// Local staging directory instead of S3.
    pub output_dir: Option<PathBuf>,
    /// Print what would be uploaded, upload nothing.
    pub dry_run: bool,
}

impl Plan {
    /// The dist directory: `{packages}/dist` when it is a directory, else the packages
    /// directory.
    pub fn dist_dir(&self) -> PathBuf {
        let sub = self.packages_dir.join("dist");
        if sub.is_dir() {
            sub
        } else {
            self.packages_dir.clone()
        }
    }

    /// Prints the reference's opening lines: directories, group, run, platform, mode.
    pub fn print(&self, out: &mut dyn Write) -> Result<(), Error> {
        let dist = self.dist_dir();
        say!(
            out,
            "[INFO] Packages directory  : {}",
            self.packages_dir.display()
        )?;
        say!(out, "[INFO] Dist [sub]directory : {}", dist.display())?;
        say!(out, "[INFO] Artifact group      : {}", self.artifact_group)?;
        say!(out, "[INFO] Run ID              : {}", self.run_id)?;
        say!(out, "[INFO] Platform            : {}", Platform::host())?;
        match (&self.output_dir, self.dry_run) {
            (_, true) => say!(out, "[INFO] Mode              : DRY RUN"),
            (Some(dir), false) => say!(
                out,
                "[INFO] Mode              : Local output to {}",
                dir.display()
            ),
            (None, false) => say!(out, "[INFO] Mode              : S3 upload"),
        }
    }
}

/// How the dist directory is laid out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    /// Single-arch: one page for the top-level packages.
    Single,
    /// Multi-arch with a directory per GPU family: a page in each, linking the family's
    /// packages and the generic ones above it.
    PerFamily(Vec<String>),
    /// Multi-arch, flat (kpack-split): one page for the top-level packages (the page the step
    /// output names, which the reference leaves to the bucket's own indexer); family pages
    /// stored by earlier uploads are rewritten to list the new packages.
    Flat,
}

/// The regular files of `dir` (not below it) whose names are packages, sorted by name.
fn packages_in(dir: &Path) -> Result<Vec<PathBuf>, Error> {
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
pub fn family_dirs(dist: &Path) -> Result<Vec<String>, Error> {
    let mut names: Vec<String> = file_tree::list(dist)?
        .into_iter()
        .filter(|e| e.is_dir && !e.is_symlink && !e.name().starts_with('.'))
        .map(|e| e.name().to_owned())
        .collect();
    names.sort();
    Ok(names)
}

/// The link to the local file `path`, with its SHA-256.
async fn link(path: &Path) -> Result<Link, Error> {
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
fn write_atomically(path: &Path, contents: &str) -> Result<(), Error> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs_err::create_dir_all(dir).map_err(|e| file_tree::FileError::write(dir, e))?;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let mut tmp =
        file_tree::temp_file_in(dir, &name).map_err(|e| file_tree::FileError::write(dir, e))?;
    tmp.write_all(contents.as_bytes())
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| file_tree::FileError::write(path, e))?;
    tmp.persist(path)
        .map_err(|e| file_tree::FileError::write(path, e.error))?;
    Ok(())
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
) -> Result<Uploads, Error> {
    let entries = storage_backend::patterns::walk(dist).map_err(|source| Error::List {
        dir: dist.to_path_buf(),
        source,
    })?;
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
/// path below `dist`. Reads the wheels: call it off the async threads.
fn check_wheels(dist: &Path, files: &Uploads) -> Result<(), Error> {
    let mut failures = Vec::new();
    for (path, _) in files {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if !name.ends_with(".whl") {
            continue;
        }
        if let Err(e) = wheel::check(path) {
            let rel = path.strip_prefix(dist).unwrap_or(path);
            failures.push((rel.to_path_buf(), e));
        }
    }
    if !failures.is_empty() {
        return Err(Error::InvalidWheels { failures });
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

/// Prints `title` underlined.
pub fn banner(out: &mut dyn Write, title: &str) -> Result<(), Error> {
    say!(out, "{title}")?;
    say!(out, "{}", "-".repeat(title.len()))
}

/// `True` or `False`, as the reference prints a flag.
fn python_bool(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}

/// Uploads the packages of `plan` to `location` (shown to the user as `shown`) with
/// `backend`, then writes the pages; the layout it found. Every wheel is checked first.
pub async fn publish(
    backend: &StorageBackend,
    plan: &Plan,
    location: &StorageLocation,
    shown: &str,
    out: &mut dyn Write,
) -> Result<Layout, Error> {
    let dist = plan.dist_dir();
    let dry_run = backend.options().dry_run;
    say!(out)?;
    banner(out, "Generating index.html")?;
    say!(
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
    say!(
        out,
        "{}",
        match layout {
            Layout::Single => "[INFO] Single-arch mode: one index for the top-level packages",
            Layout::Flat => "[INFO] kpack-split flat mode: one index for the top-level packages",
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
        return Err(Error::NoPythonPackages { dir: dist });
    }
    let local_dirs = page_dirs(&dist, &layout, &[]);
    let files = upload_list(&dist, location, &local_dirs)?;
    {
        // Each wheel's zip directory and METADATA are read: off the async threads.
        let (dist, wheels) = (dist.clone(), files.clone());
        storage_backend::blocking(move || check_wheels(&dist, &wheels)).await?;
    }
    if dry_run {
        say!(
            out,
            "[DRY RUN] Would generate index in {} (multiarch={})",
            dist.display(),
            python_bool(plan.multiarch)
        )?;
    }

    say!(out)?;
    banner(out, "Uploading packages")?;
    let mut publisher = Publisher::new(backend, location, &dist);
    let uploaded = upload(backend, &dist, files, shown, location, out).await?;
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
    say!(
        out,
        "[INFO] Uploaded {} files ({} unchanged)",
        uploaded.transferred + if dry_run { 0 } else { written },
        uploaded.skipped
    )?;
    Ok(layout)
}

/// The directories that get pages: the top of dist (single-arch); or for multi-arch, the top
/// (flat layout) and each GPU family of the layout and of `published` (families already
/// stored, whose pages also list the packages directly in the location), sorted.
fn page_dirs(dist: &Path, layout: &Layout, published: &[String]) -> Vec<PageDir> {
    let mut families: Vec<String> = published.to_vec();
    let mut dirs = Vec::new();
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
        // The prefix's own page, which the step output names.
        Layout::Flat => dirs.push(PageDir {
            rel: String::new(),
            title: "ROCm Python Packages".to_owned(),
            family: false,
        }),
        Layout::PerFamily(local) => families.extend(local.iter().cloned()),
    }
    families.sort();
    families.dedup();
    dirs.extend(families.into_iter().map(|family| PageDir {
        title: format!("ROCm Python Packages - {family}"),
        rel: family,
        family: true,
    }));
    dirs
}

/// The step outputs of a publication and the line that tells them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepOutputs {
    /// The line naming the URL later jobs use.
    pub line: String,
    /// `package_find_links_url` and `kpack_split`.
    pub outputs: [(&'static str, String); 2],
}

/// The step outputs of the pages at `location` in `layout`.
pub fn step_outputs(location: &StorageLocation, layout: &Layout) -> StepOutputs {
    let base = location.https_url();
    let (line, index_url, kpack_split) = match layout {
        Layout::PerFamily(_) => (
            format!("[INFO] Multi-arch legacy URL (tests append /{{family}}/index.html): {base}"),
            base,
            "false",
        ),
        Layout::Flat => {
            let url = format!("{base}/{INDEX_HTML}");
            (format!("[INFO] kpack-split flat URL: {url}"), url, "true")
        }
        Layout::Single => {
            let url = format!("{base}/{INDEX_HTML}");
            (format!("[INFO] Single-arch index URL: {url}"), url, "false")
        }
    };
    StepOutputs {
        line,
        outputs: [
            ("package_find_links_url", index_url),
            ("kpack_split", kpack_split.to_owned()),
        ],
    }
}

/// Sets the step outputs ([`step_outputs`]) and writes the job summary ([`summary`] for
/// `platform`), with the reference's transcript on `out`; a dry run prints them instead.
///
/// # Errors
/// [`Error::Output`] when `out` fails, [`Error::Outputs`] and [`Error::Summary`] when the
/// outputs or summary file cannot be written.
pub fn set_outputs(
    location: &StorageLocation,
    layout: &Layout,
    platform: Platform,
    dry_run: bool,
    lookup: &dyn Fn(&str) -> Option<String>,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let step = step_outputs(location, layout);
    say!(out, "{}", step.line)?;
    let outputs = step.outputs.each_ref().map(|(k, v)| (*k, v.as_str()));
    let text = summary(location, layout, platform);
    banner(out, "Set github actions output")?;
    if dry_run {
        let json = github_actions::outputs_json(&outputs);
        say!(out, "[DRY RUN] Would set github output:\n{json}")?;
    } else {
        github_actions::report_outputs(&outputs, lookup, out, None)?;
    }
    banner(out, "Write github actions build summary")?;
    if dry_run {
        say!(out, "[DRY RUN] Would write the job summary:\n{text}")?;
    } else {
        say!(out, "Writing job summary:\n{text}")?;
        if github_actions::append_step_summary_with(&text, lookup)?
            == github_actions::SummaryOutcome::NotConfigured
        {
            say!(
                out,
                "  Warning: GITHUB_STEP_SUMMARY env var not set, can't write job summary"
            )?;
        }
    }
    Ok(())
}

/// Uploads the packages (everything in `files`); the pages are written after.
async fn upload(
    backend: &StorageBackend,
    dist: &Path,
    files: Uploads,
    shown: &str,
    location: &StorageLocation,
    out: &mut dyn Write,
) -> Result<storage_backend::TransferReport, Error> {
    let top = packages_in(dist)?;
    say!(
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
        say!(out, "  - {name}")?;
    }
    say!(
        out,
        "[INFO] Uploading {} total files to {shown}:",
        files.len(),
    )?;
    for (_, to) in &files {
        let rel = to
            .relative_path()
            .strip_prefix(location.relative_path())
            .unwrap_or(to.relative_path());
        say!(out, "  {}", rel.trim_start_matches('/'))?;
    }
    backend
        .upload_files(files)
        .await
        .map_err(Error::PythonPackagesNotUploaded)
}

#[cfg(test)]
mod tests;
