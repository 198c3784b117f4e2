//! The vendored `schemas/` folder, packed by `build.rs`: one deflated entry per JSON file,
//! inflated on first use of the kinds that need it.

use serde_json::Value;

include!(concat!(env!("OUT_DIR"), "/schemas.rs"));

/// Every packed file, as its path under `schemas/`.
#[cfg(test)]
pub(crate) fn names() -> impl Iterator<Item = &'static str> {
    ENTRIES.iter().map(|(name, ..)| *name)
}

/// Total size of the packed entries, deflated and inflated.
#[cfg(test)]
pub(crate) fn sizes() -> (usize, usize) {
    ENTRIES
        .iter()
        .fold((0, 0), |(packed, raw), (_, _, p, r)| (packed + p, raw + r))
}

/// The inflated bytes of `name` (a path under `schemas/`).
pub(crate) fn bytes(name: &str) -> Result<Vec<u8>, String> {
    let index = ENTRIES
        .binary_search_by(|(entry, ..)| (*entry).cmp(name))
        .map_err(|_| format!("no embedded schema file `{name}`"))?;
    let (_, offset, len, raw_len) = ENTRIES[index];
    let packed = &BLOB[offset..offset + len];
    let raw = miniz_oxide::inflate::decompress_to_vec_with_limit(packed, raw_len)
        .map_err(|e| format!("embedded schema file `{name}` is corrupt: {e:?}"))?;
    Ok(raw)
}

/// The parsed JSON of `name`.
pub(crate) fn json(name: &str) -> Result<Value, String> {
    let raw = bytes(name)?;
    serde_json::from_slice(&raw).map_err(|e| format!("embedded schema file `{name}`: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_sorted_and_inflate() {
        let names: Vec<&str> = names().collect();
        assert!(
            names.windows(2).all(|w| w[0] < w[1]),
            "sorted for binary search"
        );
        assert!(names.contains(&"kubernetes/v1.32/_definitions.json"));
        assert!(names.contains(&"crds/index.json"));
        let (packed, raw) = sizes();
        assert!(packed * 5 < raw, "compressed {packed} of {raw} bytes");
        assert!(json("crds/index.json").unwrap().is_object());
        assert!(bytes("nope.json").is_err());
    }
}
