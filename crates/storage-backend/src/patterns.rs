//! The pattern languages of the reference (spec §5): "rglob" patterns for local trees and
//! fnmatch patterns for S3 listings, plus the directory walk they apply to. The matching and
//! the walk are [`file_tree`]'s.

use std::path::Path;

pub use file_tree::{cmp_components, fnmatch, select};

/// One entry of a walk.
pub type WalkEntry = file_tree::Entry;

/// Every entry below `root` (files, directories, symlinks), sorted, not descending into
/// symlinked directories. Unreadable directories are errors; the error names the one that
/// failed.
pub fn walk(root: &Path) -> std::io::Result<Vec<WalkEntry>> {
    file_tree::walk(root).map_err(|e| std::io::Error::new(e.source.kind(), e))
}
