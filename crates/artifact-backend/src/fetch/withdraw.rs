//! Taking an artifact that failed its merge (a conflict, an error while moving its entries)
//! out of a flattened or bootstrapped tree again: everything it placed goes, except what
//! another artifact of the fetch placed below it or holds with the same content.

use std::cmp::Reverse;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::{FlattenIndex, Owner, lock};

impl FlattenIndex {
    /// Records that artifact `key` holds `rel` too, with the content another artifact placed
    /// there: should that one be withdrawn, `rel` stays, as `key`'s.
    pub(super) fn share(&self, rel: &Path, key: &str) {
        let mut shared = lock(&self.shared);
        let keys = shared.entry(rel.to_path_buf()).or_default();
        if !keys.iter().any(|k| k == key) {
            keys.push(key.to_owned());
        }
    }

    /// Records that artifact `key` made directory `rel` of the tree.
    pub(super) fn made_dir(&self, rel: &Path, key: &str) {
        lock(&self.made_dirs).insert(rel.to_path_buf(), key.to_owned());
    }

    /// Takes away from the tree `root` what artifact `key` placed there, whose merge failed:
    /// the paths it owns (a directory with all it holds, but for what other artifacts placed
    /// or share in it; a path another artifact shares becomes that one's), then the
    /// directories it made that are empty again, deepest first. Call it holding `merging`.
    /// Best effort: what cannot be removed is logged.
    pub(super) fn withdraw(&self, root: &Path, key: &str) {
        let mut owners = lock(&self.owners);
        let mut shared = lock(&self.shared);
        for keys in shared.values_mut() {
            keys.retain(|k| k != key);
        }
        shared.retain(|_, keys| !keys.is_empty());
        let mut placed: Vec<PathBuf> = owners
            .iter()
            .filter(|(_, o)| o.key == key)
            .map(|(rel, _)| rel.clone())
            .collect();
        placed.sort_by_key(|rel| Reverse(rel.components().count()));
        for rel in &placed {
            owners.remove(rel);
            take_away(root, rel, key, &mut owners, &mut shared);
        }
        drop(shared);
        drop(owners);
        self.settled.notify_all();
        let mut made_dirs = lock(&self.made_dirs);
        let mut dirs: Vec<PathBuf> = made_dirs
            .iter()
            .filter(|(_, k)| *k == key)
            .map(|(rel, _)| rel.clone())
            .collect();
        dirs.sort_by_key(|rel| Reverse(rel.components().count()));
        for rel in dirs {
            // Another artifact may have put something there meanwhile: then it stays.
            if std::fs::remove_dir(root.join(&rel)).is_ok() {
                made_dirs.remove(&rel);
            }
        }
    }
}

/// Removes `{root}/{rel}`, placed by the withdrawn artifact `key`, except the paths below it
/// that another artifact placed (`owners`) or shares (`shared`: it becomes their owner), and
/// the directories leading to them.
fn take_away(
    root: &Path,
    rel: &Path,
    key: &str,
    owners: &mut HashMap<PathBuf, Owner>,
    shared: &mut HashMap<PathBuf, Vec<String>>,
) {
    if let Some(mut keys) = shared.remove(rel) {
        let heir = keys.remove(0);
        owners.insert(rel.to_path_buf(), Owner::placed(&heir));
        if !keys.is_empty() {
            shared.insert(rel.to_path_buf(), keys);
        }
        return;
    }
    if owners.contains_key(rel) {
        return;
    }
    let path = root.join(rel);
    let Ok(meta) = fs_err::symlink_metadata(&path) else {
        return;
    };
    let kept_below = owners
        .keys()
        .chain(shared.keys())
        .any(|p| p.starts_with(rel));
    let removed = if !meta.is_dir() {
        file_tree::remove_file(&path)
    } else if !kept_below {
        file_tree::remove_tree(&path)
    } else {
        match fs_err::read_dir(&path) {
            Ok(entries) => {
                for entry in entries.flatten() {
                    take_away(root, &rel.join(entry.file_name()), key, owners, shared);
                }
                // Empty unless something of another artifact is in it.
                let _ = std::fs::remove_dir(&path);
                Ok(())
            }
            Err(e) => Err(e),
        }
    };
    if let Err(e) = removed {
        tracing::warn!("Could not remove {} of {key}: {e}", path.display());
    }
}
