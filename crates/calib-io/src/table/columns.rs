//! Which columns of a table hold the scores and the labels.
//!
//! Scores are one list column (`FixedSizeList`/`List` of floats; K classes), one float column
//! (binary), or K float columns; labels one integer or boolean column. [`TableColumns::scores`]
//! names the score column, a comma-separated list of columns, or a prefix whose numbered columns
//! (`p_0, p_1, ...` or `p0, p1, ...`) are the classes in number order; without it, `logits`
//! (`probs` first for probabilities), then numbered `logits_*`/`probs_*` columns, then every
//! float column but the labels (and the weights), in order. [`TableColumns::labels`] names the
//! label column; without it, `labels`, then `label`. [`TableColumns::weights`], if given, names
//! a number column of sample weights.

use arrow_schema::SchemaRef;

use super::rows::{is_label_type, is_score_type};

/// The columns a caller asks for; `None` picks them by the rules of the module docs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableColumns {
    /// The score column, comma-separated columns, or the prefix of numbered columns.
    pub scores: Option<String>,
    /// The label column.
    pub labels: Option<String>,
    /// Whether the scores are probabilities (`probs` is then looked for before `logits`).
    pub probabilities: bool,
    /// The column of per-row sample weights, if any.
    pub weights: Option<String>,
}

/// The score, label (and weight) columns found.
#[derive(Debug, Clone)]
pub(super) struct Layout {
    pub scores: Vec<String>,
    pub label: String,
    pub weights: Option<String>,
}

/// Schema indices of the layout's columns, ascending.
pub(super) fn layout_indices(schema: &SchemaRef, layout: &Layout) -> Vec<usize> {
    let mut names: Vec<&String> = layout.scores.iter().collect();
    names.push(&layout.label);
    names.extend(&layout.weights);
    let mut indices: Vec<usize> = names.iter().filter_map(|n| schema.index_of(n).ok()).collect();
    indices.sort_unstable();
    indices.dedup();
    indices
}

/// The score and label columns of `schema`, by the rules of the module docs.
pub(super) fn resolve(
    schema: &SchemaRef,
    request: &TableColumns,
) -> std::result::Result<Layout, String> {
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    let listing = || format!("columns: {}", names.join(", "));
    let type_of = |n: &str| schema.field_with_name(n).map(|f| f.data_type().clone()).ok();
    let label = match &request.labels {
        Some(k) if names.contains(&k.as_str()) => k.clone(),
        Some(k) => return Err(format!("no label column `{k}` ({})", listing())),
        None => ["labels", "label"]
            .into_iter()
            .find(|n| names.contains(n))
            .map(str::to_string)
            .ok_or_else(|| format!("no label column: name it with --labels-key ({})", listing()))?,
    };
    let label_type = type_of(&label).expect("found above");
    if !is_label_type(&label_type) {
        return Err(format!("labels `{label}` must be integers or booleans, found {label_type}"));
    }
    let weights = match &request.weights {
        Some(k) => match type_of(k) {
            Some(t) if t.is_numeric() => Some(k.clone()),
            Some(t) => return Err(format!("weights `{k}` must be numbers, found {t}")),
            None => return Err(format!("no weight column `{k}` ({})", listing())),
        },
        None => None,
    };
    let floats: Vec<&str> = schema
        .fields()
        .iter()
        .filter(|f| f.data_type().is_floating() && *f.name() != label)
        .filter(|f| weights.as_deref() != Some(f.name().as_str()))
        .map(|f| f.name().as_str())
        .collect();
    let scores = score_columns(&names, &floats, request).ok_or_else(|| match &request.scores {
        Some(k) => format!("no score column or columns `{k}` ({})", listing()),
        None => format!("no score column: name it with --logits-key ({})", listing()),
    })?;
    for s in &scores {
        let t = type_of(s).ok_or_else(|| format!("no score column `{s}` ({})", listing()))?;
        let ok = if scores.len() == 1 { is_score_type(&t) } else { t.is_floating() };
        if !ok {
            let what =
                if scores.len() == 1 { "a float column or a list of floats" } else { "floats" };
            return Err(format!("scores `{s}` must be {what}, found {t}"));
        }
    }
    Ok(Layout { scores, label, weights })
}

/// The score columns `spec` asks for, or the defaults; `None` when there are none.
fn score_columns(names: &[&str], floats: &[&str], request: &TableColumns) -> Option<Vec<String>> {
    if let Some(key) = &request.scores {
        if key.contains(',') {
            return Some(key.split(',').map(|s| s.trim().to_string()).collect());
        }
        if names.contains(&key.as_str()) {
            return Some(vec![key.clone()]);
        }
        return numbered(names, key);
    }
    let preferred = if request.probabilities { ["probs", "logits"] } else { ["logits", "probs"] };
    if let Some(n) = preferred.iter().find(|n| names.contains(n)) {
        return Some(vec![n.to_string()]);
    }
    if let Some(found) = preferred.iter().find_map(|p| numbered(names, p)) {
        return Some(found);
    }
    (!floats.is_empty()).then(|| floats.iter().map(|n| n.to_string()).collect())
}

/// Columns `{prefix}{i}` or `{prefix}_{i}`, in the order of i; `None` when none.
fn numbered(names: &[&str], prefix: &str) -> Option<Vec<String>> {
    let mut found: Vec<(u64, String)> = names
        .iter()
        .filter_map(|n| {
            let rest = n.strip_prefix(prefix)?;
            let digits = rest.strip_prefix('_').unwrap_or(rest);
            let i = digits.parse::<u64>().ok().filter(|_| !digits.is_empty())?;
            Some((i, n.to_string()))
        })
        .collect();
    found.sort();
    (!found.is_empty()).then(|| found.into_iter().map(|(_, n)| n).collect())
}
