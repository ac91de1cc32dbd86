//! Reads and patches arbitrary bytes: nothing may panic, and every image `patch` returns must
//! parse back and read as the edit asked.
#![no_main]

use elf_patch::{Edit, Elf, classify_bytes, patch, read_bytes};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, image)) = data.split_first() else {
        return;
    };
    let _ = classify_bytes("fuzz", image);
    let Ok(elf) = Elf::parse(image) else {
        return;
    };
    let _ = (elf.interpreter(), elf.is_pie(), elf.has_string_table());
    let Ok(info) = read_bytes(image) else {
        return;
    };
    let long = "$ORIGIN/../fuzz/".repeat(usize::from(selector % 8) * 4 + 1);
    let edit = match selector % 4 {
        0 => {
            let mut edit = Edit::default();
            edit.set_rpath = Some(long.clone());
            edit.force_rpath = selector & 0x10 != 0;
            edit
        }
        1 => {
            let mut edit = Edit::default();
            edit.add_rpath = vec![long.clone(), "$ORIGIN".into()];
            edit.remove_rpath = selector & 0x20 != 0;
            edit
        }
        2 => {
            let mut edit = Edit::default();
            edit.set_soname = Some(format!("lib{long}.so"));
            edit
        }
        _ => {
            let mut edit = Edit::default();
            edit.replace_needed = info
                .needed
                .iter()
                .map(|n| (n.clone(), format!("{n}{long}")))
                .collect();
            edit.set_rpath = Some("$ORIGIN".into());
            edit
        }
    };
    if let Ok(Some(out)) = patch(image, &edit) {
        let after = read_bytes(&out).expect("a verified image reads back");
        if let Some(path) = &edit.set_rpath {
            if edit.add_rpath.is_empty() {
                assert_eq!(after.search_path(), Some(path.as_str()));
            }
        }
        // Patching the result again with the same edit must work as well.
        let _ = patch(&out, &edit);
    }
});
