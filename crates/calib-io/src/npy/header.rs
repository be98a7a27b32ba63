//! The header of a `.npy` stream (numpy's format, versions 1 to 3), parsed here rather than by
//! a library so that every malformed or hostile header is an error with a reason: a header is
//! at most [`MAX_HEADER_BYTES`], and a shape whose element count overflows is refused.

use std::io::Read;

/// Longest header accepted; numpy writes well under 1 KiB (padded to 64 bytes).
const MAX_HEADER_BYTES: usize = 1 << 16;

/// Element type of an array: numpy's `descr`, e.g. `<f4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Descr {
    /// `f` float, `i` signed, `u` unsigned integer, `b` bool.
    pub kind: u8,
    /// Bytes per element.
    pub size: usize,
    /// Stored big-endian (the bytes of each element need swapping on this host).
    pub big_endian: bool,
}

impl Descr {
    /// numpy's name of the type (`float32`, `int64`, `bool`).
    pub fn name(self) -> String {
        match self.kind {
            b'f' => format!("float{}", self.size * 8),
            b'i' => format!("int{}", self.size * 8),
            b'u' => format!("uint{}", self.size * 8),
            _ => "bool".into(),
        }
    }
}

/// A parsed header: element type, memory order and shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NpyHeader {
    pub descr: Descr,
    pub fortran_order: bool,
    pub shape: Vec<usize>,
    /// Bytes the header took, magic included (where the data starts).
    pub len: usize,
}

impl NpyHeader {
    /// Number of elements the shape holds.
    pub fn n_elements(&self) -> usize {
        self.shape.iter().product() // checked to fit when parsed
    }

    /// Bytes of data the shape needs.
    pub fn n_bytes(&self) -> usize {
        self.n_elements() * self.descr.size // checked to fit when parsed
    }

    /// Checks that a stream of `len` bytes (header included) holds the data the shape needs,
    /// so a header claiming more is refused before anything is allocated for it.
    ///
    /// # Errors
    /// The reason, naming the shape, the bytes needed and the bytes that follow the header.
    pub fn check_fits(&self, len: u64) -> Result<(), String> {
        let follow = len.saturating_sub(self.len as u64);
        if self.n_bytes() as u64 > follow {
            return Err(format!(
                "truncated: shape {:?} of {} needs {} bytes of data, {follow} follow",
                self.shape,
                self.descr.name(),
                self.n_bytes()
            ));
        }
        Ok(())
    }
}

/// Reads the header from the start of a `.npy` stream, leaving `reader` at the first data byte.
///
/// # Errors
/// A reason (without the file name) for anything that is not a numeric npy header.
pub(crate) fn read_header(reader: &mut impl Read) -> Result<NpyHeader, String> {
    let mut preamble = [0u8; 8];
    read_exactly(reader, &mut preamble, "the npy preamble")?;
    if &preamble[..6] != b"\x93NUMPY" {
        return Err("not a valid .npy stream (no NUMPY magic)".into());
    }
    let (len_bytes, version) = match preamble[6] {
        1 => (2, 1),
        2 | 3 => (4, preamble[6]),
        v => return Err(format!("unsupported .npy version {v}")),
    };
    let mut len = [0u8; 4];
    read_exactly(reader, &mut len[..len_bytes], "the header length")?;
    let text_len = u32::from_le_bytes(len) as usize;
    if text_len > MAX_HEADER_BYTES {
        return Err(format!("header of {text_len} bytes (at most {MAX_HEADER_BYTES} accepted)"));
    }
    let mut text = vec![0u8; text_len];
    read_exactly(reader, &mut text, "the header")?;
    let text = if version == 3 {
        String::from_utf8(text).map_err(|_| "header is not UTF-8".to_string())?
    } else {
        text.iter().map(|&b| b as char).collect() // latin-1
    };
    let mut header = parse_dict(&text)?;
    header.len = 8 + len_bytes + text_len;
    Ok(header)
}

fn read_exactly(reader: &mut impl Read, buf: &mut [u8], what: &str) -> Result<(), String> {
    reader.read_exact(buf).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => format!("truncated in {what}"),
        _ => format!("cannot read {what} ({e})"),
    })
}

/// Parses numpy's header dict, `{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }`.
fn parse_dict(text: &str) -> Result<NpyHeader, String> {
    let bad = |what: &str| format!("malformed header ({what}): {}", text.trim_end());
    let descr = value_after(text, "descr").ok_or_else(|| bad("no 'descr'"))?;
    let descr = parse_descr(descr)?;
    let fortran = value_after(text, "fortran_order").ok_or_else(|| bad("no 'fortran_order'"))?;
    let fortran_order = if fortran.starts_with("True") {
        true
    } else if fortran.starts_with("False") {
        false
    } else {
        return Err(bad("'fortran_order' is not True or False"));
    };
    let shape = value_after(text, "shape").ok_or_else(|| bad("no 'shape'"))?;
    let shape = parse_shape(shape).ok_or_else(|| bad("'shape' is not a tuple of sizes"))?;
    let elements = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
    if elements.and_then(|n| n.checked_mul(descr.size)).is_none() {
        return Err(format!("shape {shape:?} is too large to address"));
    }
    Ok(NpyHeader { descr, fortran_order, shape, len: 0 })
}

/// The text after `'key':` (spaces skipped), or `None` when the key is missing.
fn value_after<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let quoted = [format!("'{key}'"), format!("\"{key}\"")];
    let at = quoted.iter().find_map(|q| text.find(q.as_str()).map(|i| i + q.len()))?;
    text[at..].trim_start().strip_prefix(':').map(str::trim_start)
}

/// `'<f4'` (either quote) to a [`Descr`]; structured types (a list) are refused.
fn parse_descr(value: &str) -> Result<Descr, String> {
    let quote = value.chars().next().filter(|c| *c == '\'' || *c == '"');
    let Some(quote) = quote else {
        return Err("structured (record) arrays are not supported".into());
    };
    let inner = &value[1..];
    let descr = &inner[..inner.find(quote).ok_or("unterminated 'descr'")?];
    let bytes = descr.as_bytes();
    let (order, rest) = match bytes.first() {
        Some(b'<' | b'>' | b'|' | b'=') => (bytes[0], &descr[1..]),
        _ => (b'=', descr),
    };
    let kind = rest.as_bytes().first().copied().unwrap_or(0);
    let size: Option<usize> = rest.get(1..).and_then(|s| s.parse().ok());
    let ok = matches!(
        (kind, size),
        (b'f', Some(2 | 4 | 8)) | (b'i' | b'u', Some(1 | 2 | 4 | 8)) | (b'b', Some(1))
    );
    if !ok {
        return Err(format!(
            "unsupported element type `{descr}`; expected a float or integer array"
        ));
    }
    let big_endian = order == b'>' || (order == b'=' && cfg!(target_endian = "big"));
    Ok(Descr { kind, size: size.unwrap_or(1), big_endian })
}

/// `(3, 4)`, `(5,)` or `()` to sizes (a Python 2 `L` suffix is accepted).
fn parse_shape(value: &str) -> Option<Vec<usize>> {
    let inner = value.strip_prefix('(')?;
    let inner = &inner[..inner.find(')')?];
    inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.trim_end_matches('L').parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(dict: &str) -> Vec<u8> {
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend((dict.len() as u16).to_le_bytes());
        out.extend(dict.as_bytes());
        out
    }

    #[test]
    fn parses_what_numpy_writes() {
        let bytes = header("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }    \n");
        let h = read_header(&mut bytes.as_slice()).unwrap();
        assert_eq!(h.descr, Descr { kind: b'f', size: 4, big_endian: false });
        assert_eq!((h.fortran_order, h.shape.clone(), h.len), (false, vec![3, 4], bytes.len()));
        let h = read_header(
            &mut header("{'descr': '>i8', 'fortran_order': True, 'shape': (5,), }").as_slice(),
        )
        .unwrap();
        assert_eq!((h.descr.big_endian, h.descr.name(), h.shape), (true, "int64".into(), vec![5]));
        let h = read_header(
            &mut header("{'descr': '|b1', 'fortran_order': False, 'shape': (), }").as_slice(),
        )
        .unwrap();
        assert_eq!((h.descr.name(), h.n_elements()), ("bool".into(), 1));
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        let cases = [
            ("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,), }", "structured"),
            ("{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", "unsupported element"),
            ("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (3,), }", "fortran_order"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (3, x), }", "shape"),
            ("{'descr': '<f4', 'fortran_order': False, }", "no 'shape'"),
            (
                "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }",
                "too large",
            ),
        ];
        for (dict, why) in cases {
            let err = read_header(&mut header(dict).as_slice()).unwrap_err();
            assert!(err.contains(why), "{dict}: {err}");
        }
        assert!(read_header(&mut &b"\x93NUMPY\x01"[..]).unwrap_err().contains("truncated"));
        assert!(read_header(&mut &b"PK\x03\x04...."[..]).unwrap_err().contains("magic"));
        let huge = b"\x93NUMPY\x02\x00\xff\xff\xff\x7f";
        assert!(read_header(&mut &huge[..]).unwrap_err().contains("at most"));
    }
}
