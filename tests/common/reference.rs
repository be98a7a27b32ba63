//! An independent f64 reference of every metric: plain loops over rows, written from
//! docs/conventions.md without any of calib's code (no shared binning, no tensors).

/// Row-wise softmax in f64 of f32 logits.
pub fn softmax(logits: &[f32], k: usize) -> Vec<Vec<f64>> {
    logits
        .chunks(k)
        .map(|row| {
            let m = row.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b as f64));
            let e: Vec<f64> = row.iter().map(|&v| (v as f64 - m).exp()).collect();
            let s: f64 = e.iter().sum();
            e.iter().map(|v| v / s).collect()
        })
        .collect()
}

/// `(confidence, predicted class)`, ties to the lowest class.
pub fn top(p: &[f64]) -> (f64, usize) {
    let mut best = 0;
    for j in 1..p.len() {
        if p[j] > p[best] {
            best = j;
        }
    }
    (p[best], best)
}

/// Even-bin index by the definition `b/B < p <= (b+1)/B`, bin 0 also holding 0.
pub fn even_bin(p: f64, b: usize) -> usize {
    for j in 0..b {
        if p <= (j + 1) as f64 / b as f64 {
            return j;
        }
    }
    b - 1
}

/// `(count, mean score, mean outcome)` per even bin of (score, outcome) pairs.
pub fn even_bins(pairs: &[(f64, f64)], b: usize) -> Vec<(f64, f64, f64)> {
    let mut acc = vec![(0.0, 0.0, 0.0); b];
    for &(s, o) in pairs {
        let j = even_bin(s, b);
        acc[j].0 += 1.0;
        acc[j].1 += s;
        acc[j].2 += o;
    }
    acc.into_iter()
        .map(|(n, s, o)| if n > 0.0 { (n, s / n, o / n) } else { (0.0, 0.0, 0.0) })
        .collect()
}

/// `(count, mean score, mean outcome)` per adaptive range: stable sort, positions
/// `floor(r n / R) .. floor((r+1) n / R) - 1`.
pub fn adaptive_bins(pairs: &[(f64, f64)], r: usize) -> Vec<(f64, f64, f64)> {
    let mut sorted = pairs.to_vec();
    sorted.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap()); // stable
    let n = sorted.len();
    (0..r)
        .map(|i| {
            let part = &sorted[i * n / r..(i + 1) * n / r];
            let c = part.len() as f64;
            if c == 0.0 {
                return (0.0, 0.0, 0.0);
            }
            let s: f64 = part.iter().map(|p| p.0).sum();
            let o: f64 = part.iter().map(|p| p.1).sum();
            (c, s / c, o / c)
        })
        .collect()
}

pub fn top_pairs(probs: &[Vec<f64>], labels: &[i64]) -> Vec<(f64, f64)> {
    probs
        .iter()
        .zip(labels)
        .map(|(p, &y)| {
            let (c, pred) = top(p);
            (c, (pred as i64 == y) as u8 as f64)
        })
        .collect()
}

pub fn class_pairs(probs: &[Vec<f64>], labels: &[i64], k: usize) -> Vec<(f64, f64)> {
    probs.iter().zip(labels).map(|(p, &y)| (p[k], (y == k as i64) as u8 as f64)).collect()
}

/// `sum_b (n_b / N) |acc_b - conf_b|`.
pub fn weighted_l1(bins: &[(f64, f64, f64)], n: f64) -> f64 {
    bins.iter().map(|&(c, s, o)| c / n * (o - s).abs()).sum()
}

pub fn ece(probs: &[Vec<f64>], labels: &[i64], b: usize) -> f64 {
    weighted_l1(&even_bins(&top_pairs(probs, labels), b), probs.len() as f64)
}

pub fn mce(probs: &[Vec<f64>], labels: &[i64], b: usize) -> f64 {
    even_bins(&top_pairs(probs, labels), b)
        .iter()
        .filter(|x| x.0 > 0.0)
        .map(|&(_, s, o)| (o - s).abs())
        .fold(0.0, f64::max)
}

pub fn sce(probs: &[Vec<f64>], labels: &[i64], b: usize) -> f64 {
    let k = probs[0].len();
    let n = probs.len() as f64;
    (0..k).map(|j| weighted_l1(&even_bins(&class_pairs(probs, labels, j), b), n)).sum::<f64>()
        / k as f64
}

pub fn ace(probs: &[Vec<f64>], labels: &[i64], r: usize, eps: Option<f64>) -> f64 {
    let k = probs[0].len();
    let mut total = 0.0;
    for j in 0..k {
        let pairs: Vec<_> = class_pairs(probs, labels, j)
            .into_iter()
            .filter(|p| eps.is_none_or(|e| p.0 > e))
            .collect();
        total += adaptive_bins(&pairs, r)
            .iter()
            .filter(|x| x.0 > 0.0)
            .map(|&(_, s, o)| (o - s).abs())
            .sum::<f64>();
    }
    total / (k * r) as f64
}

pub fn toplabel_ece(probs: &[Vec<f64>], labels: &[i64], b: usize) -> f64 {
    let k = probs[0].len();
    let n = probs.len() as f64;
    let mut total = 0.0;
    for c in 0..k {
        let pairs: Vec<_> = probs
            .iter()
            .zip(labels)
            .filter(|(p, _)| top(p).1 == c)
            .map(|(p, &y)| (top(p).0, (c as i64 == y) as u8 as f64))
            .collect();
        total += weighted_l1(&even_bins(&pairs, b), n);
    }
    total
}

/// `(plug-in, debiased)` L2 errors on adaptive top-label ranges.
pub fn l2(probs: &[Vec<f64>], labels: &[i64], r: usize) -> (f64, f64) {
    let n = probs.len() as f64;
    let bins = adaptive_bins(&top_pairs(probs, labels), r);
    let mut plug = 0.0;
    let mut deb = 0.0;
    for (c, s, o) in bins {
        if c == 0.0 {
            continue;
        }
        let sq = (s - o) * (s - o);
        plug += c / n * sq;
        deb += c / n * if c >= 2.0 { sq - o * (1.0 - o) / (c - 1.0) } else { sq };
    }
    (plug.sqrt(), deb.max(0.0).sqrt())
}

pub fn nll(probs: &[Vec<f64>], labels: &[i64], logits: &[f32]) -> f64 {
    // -log p_y = logsumexp(z) - z_y, from the logits directly.
    let k = probs[0].len();
    logits
        .chunks(k)
        .zip(labels)
        .map(|(row, &y)| {
            let m = row.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b as f64));
            let lse = m + row.iter().map(|&v| (v as f64 - m).exp()).sum::<f64>().ln();
            lse - row[y as usize] as f64
        })
        .sum::<f64>()
        / probs.len() as f64
}

pub fn brier(probs: &[Vec<f64>], labels: &[i64]) -> f64 {
    probs
        .iter()
        .zip(labels)
        .map(|(p, &y)| {
            p.iter()
                .enumerate()
                .map(|(j, &v)| (v - (j as i64 == y) as u8 as f64).powi(2))
                .sum::<f64>()
        })
        .sum::<f64>()
        / probs.len() as f64
}

pub fn accuracy(probs: &[Vec<f64>], labels: &[i64]) -> f64 {
    top_pairs(probs, labels).iter().map(|p| p.1).sum::<f64>() / probs.len() as f64
}
