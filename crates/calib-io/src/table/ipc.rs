//! Arrow IPC files (`ARROW1` magic; read with a projection) and streams, their claimed lengths
//! checked against the file's size first ([`ipc_claims`]), arrow-ipc's panics on damaged data
//! turned into errors ([`super::decoder_panics`]).

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use arrow_ipc::reader::{FileReader, StreamReader};

use super::columns::{TableColumns, layout_indices, resolve};
use super::decoder_panics::{guarded_batches, guarded_try};
use super::ipc_claims;
use super::source::Source;

/// Opens the Arrow IPC file or stream at `path` for the columns `request` asks for.
pub(super) fn open_ipc(path: &Path, request: &TableColumns) -> Result<Source, String> {
    let mut magic = [0u8; 6];
    let mut file = File::open(path).map_err(|e| e.to_string())?;
    let is_file = file.read_exact(&mut magic).is_ok() && &magic == b"ARROW1";
    let size = file.metadata().map_err(|e| e.to_string())?.len();
    let reopen = || File::open(path).map_err(|e| e.to_string());
    if is_file {
        ipc_claims::check_file(&mut file, size)
            .map_err(|e| format!("not a readable Arrow IPC file ({e})"))?;
        let open = || FileReader::try_new(reopen()?, None).map_err(|e| e.to_string());
        let reader =
            guarded_try(open).map_err(|e| format!("not a readable Arrow IPC file ({e})"))?;
        let schema = reader.schema();
        let layout = resolve(&schema, request)?;
        let projection = layout_indices(&schema, &layout);
        let reader = FileReader::try_new(reopen()?, Some(projection)).map_err(|e| e.to_string())?;
        return Ok(Source { layout, batches: guarded_batches(Box::new(reader)), n_rows: None });
    }
    ipc_claims::check_stream(&mut file, 0, size)
        .map_err(|e| format!("not a readable Arrow IPC file or stream ({e})"))?;
    let open = || StreamReader::try_new(BufReader::new(reopen()?), None).map_err(|e| e.to_string());
    let reader =
        guarded_try(open).map_err(|e| format!("not a readable Arrow IPC file or stream ({e})"))?;
    let layout = resolve(&reader.schema(), request)?;
    Ok(Source { layout, batches: guarded_batches(Box::new(reader)), n_rows: None })
}
