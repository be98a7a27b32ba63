//! `calib eval DATA --resume MERGED [--shard I] --save-state OUT`: a later pass of the
//! adaptive ranges over one shard's rows, placed where the shard sits in the whole set (ties
//! split in sample order across shards), written as the shard's state of that pass.

use calib_core::{EvaluationState, StreamingEvaluation};
use serde_json::json;

use super::calibrated::{check_streamable, load_calibrated};
use super::chunked;
use crate::cli::{EvalArgs, Format};
use crate::commands::context::{Context, load_calibrator, print};
use crate::error::plain;
use crate::error::{CliError, Result};
use crate::io::{read_state, write_state};

pub(super) fn run(args: &EvalArgs, ctx: &Context) -> Result<()> {
    let (Some(resume), Some(out)) = (&args.resume, &args.save_state) else {
        return Err(CliError::Usage("--resume needs --save-state".into()));
    };
    let state = read_state(resume)?;
    let place = Place::of(&state, args.shard, &resume.display().to_string())?;
    let calibrator =
        args.calibrator.as_deref().map(|p| load_calibrator(p, &ctx.device)).transpose()?;
    check_streamable(calibrator.as_ref())?;
    let origin = args.data.data.display().to_string();
    let mut stream = StreamingEvaluation::from_state(state.for_workers())
        .map_err(|e| CliError::input(resume.display(), plain(e)))?
        .with_first_row(place.first_row);
    if chunked::streams(&args.data.data) {
        chunked::one_pass(args, calibrator.as_ref(), ctx, &mut stream)?;
    } else {
        let (_, preds, _) = load_calibrated(args, calibrator.as_ref(), ctx)?;
        stream.update(&preds).map_err(|e| CliError::core(&origin, e))?;
    }
    let seen = stream.state().rows_in_pass();
    if seen != place.rows {
        return Err(CliError::input(
            &origin,
            format!(
                "{seen} rows, but shard {} of {} had {} in the first pass; --shard names the \
                 shard's place in the order `calib merge` took the first-pass states",
                place.shard, place.shards, place.rows
            ),
        ));
    }
    write_state(out, stream.state())?;
    print(&place.summary(args, stream.pass()))
}

/// Where a shard's rows sit in the whole set.
struct Place {
    /// 1-based.
    shard: usize,
    shards: usize,
    first_row: u64,
    rows: u64,
}

impl Place {
    /// Shard `shard` of the merged `state` read from `origin`, checked.
    fn of(state: &EvaluationState, shard: Option<usize>, origin: &str) -> Result<Self> {
        let refuse = |message: String| Err(CliError::input(origin, message));
        if state.pass() == 1 {
            return refuse(
                "a first-pass state: merge every shard's first-pass state with `calib merge S1 \
                 S2 ... --save-state M`, then resume from M"
                    .into(),
            );
        }
        if !state.needs_pass() {
            return refuse(format!(
                "needs no further pass (`calib merge {origin}` prints its metrics)"
            ));
        }
        if state.n_samples() == 0 {
            return refuse(format!(
                "a shard's state of pass {}, not a merged one: resume from the state `calib \
                 merge --save-state` wrote",
                state.pass()
            ));
        }
        let whole = [state.n_samples()];
        let shards = if state.shards().is_empty() { &whole[..] } else { state.shards() };
        let shard = match shard {
            Some(i) => i,
            None if shards.len() == 1 => 1,
            None => {
                return Err(CliError::Usage(format!(
                    "{origin} holds {} shards: name this file's place with --shard I (1 to {}, \
                     in the order `calib merge` took them)",
                    shards.len(),
                    shards.len()
                )));
            }
        };
        if !(1..=shards.len()).contains(&shard) {
            return Err(CliError::Usage(format!(
                "--shard {shard}: {origin} holds shards 1 to {}",
                shards.len()
            )));
        }
        let first_row = shards[..shard - 1].iter().sum();
        Ok(Self { shard, shards: shards.len(), first_row, rows: shards[shard - 1] })
    }

    /// What `calib eval --resume` prints: the pass, the shard and where its state went.
    fn summary(&self, args: &EvalArgs, pass: u32) -> String {
        let file = args.data.data.display().to_string();
        let out = args.save_state.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
        let rows = format!("{}..{}", self.first_row, self.first_row + self.rows);
        match args.format {
            Format::Table => format!(
                "{file}: pass {pass} over shard {} of {} (rows {rows}), state written to {out}\n",
                self.shard, self.shards
            ),
            Format::Csv => format!(
                "file,pass,shard,shards,first_row,n,state\n{file},{pass},{},{},{},{},{out}\n",
                self.shard, self.shards, self.first_row, self.rows
            ),
            Format::Json => format!(
                "{}\n",
                json!({
                    "file": file,
                    "pass": pass,
                    "shard": self.shard,
                    "shards": self.shards,
                    "first_row": self.first_row,
                    "n": self.rows,
                    "state": out,
                })
            ),
        }
    }
}
