//! Packs `schemas/` and `data/platform/` into the binary: every file deflated on its own (so
//! the checker inflates only the schemas of the kinds it meets, a render only the platform
//! components its clusters need), concatenated into `OUT_DIR/<name>.bin`, with a table of
//! contents in `OUT_DIR/<name>.rs` that `src/schema/embedded.rs` and `src/sync/platform.rs`
//! include.
//!
//! Reruns only when something under those folders (or this file) changes.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

/// miniz_oxide's best compression; packing all of `schemas/` takes well under a second.
const LEVEL: u8 = 9;

fn main() {
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    rule_docs(&root, &out);
    fingerprint(&root, &out);
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=schemas");
    // SOURCES.md: for people, not run time.
    pack(&root.join("schemas"), &out, "schemas", ".json");
    // The platform controllers' release manifests (data/platform/SOURCES.md).
    println!("cargo::rerun-if-changed=data/platform");
    pack(
        &root.join("data").join("platform"),
        &out,
        "platform",
        ".yaml",
    );
}

/// Packs every file under `dir` whose name ends with `suffix`, each deflated on its own, into
/// `OUT_DIR/<name>.bin`, with its table of contents in `OUT_DIR/<name>.rs`.
fn pack(dir: &Path, out: &Path, name: &str, suffix: &str) {
    let mut files = Vec::new();
    collect(dir, &mut files);
    // Sorted by the name the table holds (not by path components), for binary search.
    let mut files: Vec<(String, PathBuf)> = files
        .into_iter()
        .map(|file| {
            let name = file
                .strip_prefix(dir)
                .expect("under the packed folder")
                .to_str()
                .expect("UTF-8 file name")
                .replace('\\', "/");
            (name, file)
        })
        .filter(|(name, _)| name.ends_with(suffix))
        .collect();
    files.sort();

    let mut blob = Vec::new();
    let mut toc = String::from(
        "/// `(path under the packed folder, offset in the blob, deflated length, inflated length)`, sorted.\n\
         pub(super) static ENTRIES: &[(&str, usize, usize, usize)] = &[\n",
    );
    for (name, file) in &files {
        let raw = fs::read(file).unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        let packed = miniz_oxide::deflate::compress_to_vec(&raw, LEVEL);
        writeln!(
            toc,
            "    ({name:?}, {}, {}, {}),",
            blob.len(),
            packed.len(),
            raw.len()
        )
        .expect("write to a String");
        blob.extend_from_slice(&packed);
    }
    toc.push_str("];\n");
    toc.push_str(&format!(
        "/// Every entry's deflated bytes, back to back.\n\
         pub(super) static BLOB: &[u8] = include_bytes!(concat!(env!(\"OUT_DIR\"), \"/{name}.bin\"));\n"
    ));
    fs::write(out.join(format!("{name}.bin")), &blob).expect("write the packed blob");
    fs::write(out.join(format!("{name}.rs")), toc).expect("write the table of contents");
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    let entries =
        fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            collect(&path, files);
        } else {
            files.push(path);
        }
    }
}

/// Embeds `docs/rules/<rule-id>.md`, one per rule, as `OUT_DIR/rule_docs.rs`: a sorted table
/// of `(rule id, Markdown)` that `src/rules.rs` includes. Adding a rule's doc is adding a file.
fn rule_docs(root: &Path, out: &Path) {
    let docs = root.join("docs").join("rules");
    println!("cargo::rerun-if-changed=docs/rules");
    let mut entries: Vec<(String, PathBuf)> = fs::read_dir(&docs)
        .map(|dir| {
            dir.filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|path| path.extension().is_some_and(|e| e == "md"))
                .map(|path| {
                    let id = path
                        .file_stem()
                        .and_then(|s| s.to_str())
                        .expect("UTF-8 file name")
                        .to_string();
                    (id, path)
                })
                .collect()
        })
        .unwrap_or_default();
    entries.sort();
    let mut table = String::from(
        "/// `(rule id, Markdown doc)` from `docs/rules/`, sorted by id.\n\
         pub(crate) static DOCS: &[(&str, &str)] = &[\n",
    );
    for (id, path) in &entries {
        writeln!(
            table,
            "    ({id:?}, include_str!({:?})),",
            path.display().to_string()
        )
        .expect("write to a String");
    }
    table.push_str("];\n");
    fs::write(out.join("rule_docs.rs"), table).expect("write rule_docs.rs");
}

/// Writes `OUT_DIR/fingerprint.txt`: a hash of everything compiled or embedded into the binary
/// that decides what a render writes (sources, templates, catalog, schemas, rule docs, data,
/// locked dependencies). The render cache keys on it, so a changed binary never reuses output
/// rendered by another, even at the same version number.
fn fingerprint(root: &Path, out: &Path) {
    let mut files = Vec::new();
    for dir in ["src", "schemas", "data", "docs/rules"] {
        let path = root.join(dir);
        println!("cargo::rerun-if-changed={dir}");
        if path.is_dir() {
            collect(&path, &mut files);
        }
    }
    for file in ["Cargo.lock", "Cargo.toml", "build.rs"] {
        files.push(root.join(file));
    }
    println!("cargo::rerun-if-changed=Cargo.lock");
    println!("cargo::rerun-if-changed=Cargo.toml");
    files.sort();
    // FNV-1a over each file's path and bytes: stable across machines and builds.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for byte in bytes {
            hash = (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
        }
    };
    for file in &files {
        let relative = file.strip_prefix(root).unwrap_or(file);
        feed(relative.to_string_lossy().as_bytes());
        feed(&[0]);
        if let Ok(bytes) = fs::read(file) {
            feed(&bytes);
        }
        feed(&[0xff]);
    }
    fs::write(out.join("fingerprint.txt"), format!("{hash:016x}")).expect("write fingerprint.txt");
}
