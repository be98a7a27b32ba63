//! The lengths an Arrow IPC file or stream claims, checked against its size before arrow-ipc
//! reads it. arrow-ipc allocates each message's metadata, body and the file's footer at the
//! sizes the bytes claim (zeroed buffers, before reading), and panics on a negative block
//! length; a damaged or hostile 4-byte file could make it allocate gigabytes. Walking the
//! framing first, reading only the small headers and seeking over bodies, bounds every such
//! allocation by the file's size.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

use arrow_ipc::{root_as_footer, root_as_message};

/// The 4 bytes that precede a message's length in the current IPC format.
const CONTINUATION: u32 = 0xFFFF_FFFF;
/// `ARROW1` and its padding at the start of an IPC file.
const FILE_HEAD: u64 = 8;
/// The footer's length (4 bytes) and `ARROW1` at the end of an IPC file.
const FILE_TAIL: u64 = 10;

/// Checks the stream whose messages start at byte `from` of `file` (of `size` bytes): each
/// message's metadata and body lie within the file, up to its end-of-stream marker or its end.
pub(super) fn check_stream(file: &mut File, from: u64, size: u64) -> Result<(), String> {
    let mut at = from;
    while at < size {
        let mut word = [0u8; 4];
        if read_at(file, at, &mut word).is_err() {
            return Err(format!("a message header is cut off at byte {at}"));
        }
        at += 4;
        let mut length = u32::from_le_bytes(word);
        if length == CONTINUATION {
            read_at(file, at, &mut word)
                .map_err(|_| format!("a message length is cut off at byte {at}"))?;
            at += 4;
            length = u32::from_le_bytes(word);
        }
        if length == 0 {
            return Ok(());
        }
        let body = message_body(file, at, u64::from(length), size)?;
        at += u64::from(length) + body;
        if at > size {
            return Err(format!(
                "a message body runs {} bytes past the end of the file",
                at - size
            ));
        }
    }
    Ok(())
}

/// The body length of the message whose metadata (`length` bytes) starts at byte `at`, its
/// batch's buffers checked to lie within that body.
fn message_body(file: &mut File, at: u64, length: u64, size: u64) -> Result<u64, String> {
    if length > size - at {
        return Err(format!(
            "a message at byte {at} claims {length} bytes of metadata; {} remain",
            size - at
        ));
    }
    let mut metadata = vec![0u8; length as usize];
    read_at(file, at, &mut metadata).map_err(|e| e.to_string())?;
    let message =
        root_as_message(&metadata).map_err(|e| format!("a damaged message at byte {at} ({e})"))?;
    let body = u64::try_from(message.bodyLength())
        .map_err(|_| format!("a message at byte {at} claims a negative body length"))?;
    check_buffers(&message, body).map_err(|e| format!("a message at byte {at}: {e}"))?;
    Ok(body)
}

/// Checks that the buffers of `message`'s record batch (or dictionary batch) lie within a
/// body of `body` bytes: arrow-ipc slices them out of it unchecked and panics otherwise.
fn check_buffers(message: &arrow_ipc::Message, body: u64) -> Result<(), String> {
    let batch = message
        .header_as_record_batch()
        .or_else(|| message.header_as_dictionary_batch().and_then(|d| d.data()));
    let buffers = batch.and_then(|b| b.buffers()).into_iter().flatten();
    for buffer in buffers {
        let (offset, length) = (buffer.offset(), buffer.length());
        let end = u64::try_from(offset)
            .ok()
            .zip(u64::try_from(length).ok())
            .and_then(|(o, l)| o.checked_add(l));
        if end.is_none_or(|end| end > body) {
            return Err(format!(
                "a buffer at {offset} of {length} bytes lies outside its {body}-byte body"
            ));
        }
    }
    Ok(())
}

/// Checks the message of a file's block (`metadata` bytes at `offset`, the continuation marker
/// and length first, then a body of `body` bytes): its buffers lie within the block's body.
fn check_block(file: &mut File, offset: u64, metadata: u64, body: u64) -> Result<(), String> {
    let mut bytes = vec![0u8; metadata as usize];
    read_at(file, offset, &mut bytes).map_err(|e| e.to_string())?;
    let skip = if bytes.starts_with(&CONTINUATION.to_le_bytes()) { 8 } else { 4 };
    let flatbuffer = bytes.get(skip..).unwrap_or_default();
    let message = root_as_message(flatbuffer)
        .map_err(|e| format!("a damaged block at byte {offset} ({e})"))?;
    check_buffers(&message, body).map_err(|e| format!("a block at byte {offset}: {e}"))
}

/// Checks an IPC file (of `size` bytes, `ARROW1` at its start): its footer lies within it,
/// and so does every block the footer lists; then the stream of messages inside it.
pub(super) fn check_file(file: &mut File, size: u64) -> Result<(), String> {
    if size < FILE_HEAD + FILE_TAIL {
        return Err(format!("{size} bytes are too few for an Arrow IPC file"));
    }
    let mut word = [0u8; 4];
    read_at(file, size - FILE_TAIL, &mut word).map_err(|e| e.to_string())?;
    let footer_length = u64::try_from(i32::from_le_bytes(word)).unwrap_or(u64::MAX);
    let room = size - FILE_HEAD - FILE_TAIL;
    if footer_length > room {
        return Err(format!("the footer claims {footer_length} bytes; the file holds {room}"));
    }
    let footer_start = size - FILE_TAIL - footer_length;
    let mut bytes = vec![0u8; footer_length as usize];
    read_at(file, footer_start, &mut bytes).map_err(|e| e.to_string())?;
    let footer = root_as_footer(&bytes).map_err(|e| format!("a damaged footer ({e})"))?;
    let blocks = footer.recordBatches().into_iter().chain(footer.dictionaries()).flatten();
    for block in blocks {
        let (offset, metadata, body) = (block.offset(), block.metaDataLength(), block.bodyLength());
        let end = u64::try_from(offset).ok().zip(u64::try_from(metadata).ok()).and_then(
            |(offset, metadata)| {
                let body = u64::try_from(body).ok()?;
                offset.checked_add(metadata)?.checked_add(body)
            },
        );
        if end.is_none_or(|end| end > footer_start) {
            return Err(format!(
                "a block claims bytes {offset} to {offset} + {metadata} + {body}, outside the \
                 file's {footer_start} bytes of messages"
            ));
        }
        // In range, so none of the three is negative.
        check_block(file, offset as u64, metadata as u64, body as u64)?;
    }
    check_stream(file, FILE_HEAD, footer_start)
}

/// Reads `out.len()` bytes at byte `at` of `file`.
fn read_at(file: &mut File, at: u64, out: &mut [u8]) -> std::io::Result<()> {
    file.seek(SeekFrom::Start(at))?;
    file.read_exact(out)
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::Arc;

    use arrow_array::{Int64Array, RecordBatch};

    use super::*;

    /// A stream (or file) of two batches, written by arrow-ipc.
    fn written(stream: bool) -> Vec<u8> {
        let batch =
            RecordBatch::try_from_iter([("y", Arc::new(Int64Array::from(vec![1, 2, 3])) as _)])
                .unwrap();
        let mut out = Vec::new();
        if stream {
            let mut w =
                arrow_ipc::writer::StreamWriter::try_new(&mut out, &batch.schema()).unwrap();
            (0..2).for_each(|_| w.write(&batch).unwrap());
            w.finish().unwrap();
        } else {
            let mut w = arrow_ipc::writer::FileWriter::try_new(&mut out, &batch.schema()).unwrap();
            (0..2).for_each(|_| w.write(&batch).unwrap());
            w.finish().unwrap();
        }
        out
    }

    fn checked(bytes: &[u8], file: bool) -> Result<(), String> {
        let path = std::env::temp_dir().join(format!(
            "calib-ipc-claims-{}-{}",
            std::process::id(),
            bytes.len() * 2 + usize::from(file)
        ));
        std::fs::File::create(&path).unwrap().write_all(bytes).unwrap();
        let mut f = File::open(&path).unwrap();
        let size = bytes.len() as u64;
        let outcome = if file { check_file(&mut f, size) } else { check_stream(&mut f, 0, size) };
        std::fs::remove_file(&path).unwrap();
        outcome
    }

    #[test]
    fn written_files_and_streams_pass_and_overclaiming_ones_are_refused() {
        let (stream, file) = (written(true), written(false));
        assert_eq!(checked(&stream, false), Ok(()));
        assert_eq!(checked(&file, true), Ok(()));
        // A 4-byte stream claiming 16 MiB of metadata (legacy framing), or with the marker.
        let e = checked(&[0, 0, 0, 1], false).unwrap_err();
        assert!(e.contains("claims 16777216 bytes of metadata"), "{e}");
        let e = checked(&[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0x40], false).unwrap_err();
        assert!(e.contains("bytes of metadata"), "{e}");
        // Cut short: the last body runs past the end.
        assert!(checked(&stream[..stream.len() - 24], false).unwrap_err().contains("past the end"));
        // A file whose footer claims more than the file holds.
        let mut long = file.clone();
        let at = long.len() - 10;
        long[at..at + 4].copy_from_slice(&i32::MAX.to_le_bytes());
        assert!(checked(&long, true).unwrap_err().contains("the footer claims"));
        assert!(checked(&file[..12], true).unwrap_err().contains("too few"));
    }
}
