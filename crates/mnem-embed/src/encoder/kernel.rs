//! The one product the encoder spends its time in: `out = x · Wᵀ` for row-major `x`
//! (m×k) and `W` (n×k), W stored as float16 (the model's weights, read in place) or
//! float32 (attention's own operands).
//!
//! Why not a general GEMM: a query is ~15 tokens, so `m` is tiny and a GEMM's packing of
//! `W` (all 10.6M weights per query) cost more than the arithmetic — candle spent 15 ms
//! per query this way. Here `W` is read in its stored row order, four rows at a time
//! widened to float32 into a buffer that stays in L1 (the next four prefetched
//! meanwhile), and each vector of those rows feeds three rows of `x`. The weights are
//! float16 in memory because streaming them is a quarter of the time: widened once at
//! load to float32 (42 MB, past the cache) a query took twice as long.

use rayon::prelude::*;

use super::activation::gelu_in_place;

/// The right-hand operand: `rows` rows of `cols` values, row-major and contiguous.
#[derive(Clone, Copy)]
pub enum Weights<'a> {
    /// Little-endian IEEE binary16, two bytes per value.
    F16(&'a [u8]),
    F32(&'a [f32]),
}

impl Weights<'_> {
    fn len(&self) -> usize {
        match self {
            Weights::F16(bytes) => bytes.len() / 2,
            Weights::F32(values) => values.len(),
        }
    }

    fn get(&self, index: usize) -> f32 {
        match self {
            Weights::F16(bytes) => {
                half::f16::from_le_bytes([bytes[2 * index], bytes[2 * index + 1]]).to_f32()
            }
            Weights::F32(values) => values[index],
        }
    }
}

/// What is done to each output value after its sum, inside the work unit that computed
/// it (so it runs on every core, while the value is still in cache).
#[derive(Clone, Copy, Default)]
pub struct Epilogue<'a> {
    /// Added per output column.
    pub bias: Option<&'a [f32]>,
    /// Then GELU.
    pub gelu: bool,
}

/// Output rows per work unit: a unit's rows of `x` (48 × 1,536 floats at most, 288 KiB)
/// stay in the core's L2 while every row of `W` streams past them.
const ROW_TILE: usize = 48;
/// Output columns per work unit: enough units for two cores even when `m` is one tile.
const COL_TILE: usize = 64;
/// Products under this many multiply-adds (attention's small ones, tens of µs on one
/// core) run on the calling thread: splitting them would cost wake-ups for little work.
/// Chosen, not tuned.
const PARALLEL_WORK: usize = 1 << 20;

/// `out[i][j] = then(Σ_t x[i][t] · w[j][t])`, for `x` m×k, `w` n×k, `out` m×n.
///
/// # Panics
/// When a slice's length does not match the shape (a caller's bug, never input).
pub fn matmul_transposed(
    x: &[f32],
    shape: (usize, usize),
    w: Weights,
    n: usize,
    then: Epilogue,
    out: &mut [f32],
) {
    matmul_on(Path::best(), x, shape, w, n, then, out);
}

fn matmul_on(
    path: Path,
    x: &[f32],
    (m, k): (usize, usize),
    w: Weights,
    n: usize,
    then: Epilogue,
    out: &mut [f32],
) {
    let bias = then.bias;
    assert_eq!(x.len(), m * k, "x is m×k");
    assert_eq!(w.len(), n * k, "w is n×k");
    assert_eq!(out.len(), m * n, "out is m×n");
    if let Some(bias) = bias {
        assert_eq!(bias.len(), n, "one bias per output column");
    }
    if m == 0 || n == 0 {
        return;
    }
    let col_tiles = n.div_ceil(COL_TILE);
    let units = m.div_ceil(ROW_TILE) * col_tiles;
    let target = Target {
        ptr: out.as_mut_ptr(),
    };
    let run = |unit: usize| {
        let (i0, j0) = (unit / col_tiles * ROW_TILE, unit % col_tiles * COL_TILE);
        let rows = i0..(i0 + ROW_TILE).min(m);
        let cols = j0..(j0 + COL_TILE).min(n);
        // SAFETY: units are disjoint rectangles of `out`, which outlives this call.
        unsafe {
            tile(path, x, k, w, n, bias, rows.clone(), cols.clone(), target);
            if then.gelu {
                for i in rows {
                    let row = std::slice::from_raw_parts_mut(
                        target.ptr.add(i * n + cols.start),
                        cols.len(),
                    );
                    activate(path, row);
                }
            }
        }
    };
    if m * n * k >= PARALLEL_WORK && units > 1 {
        (0..units).into_par_iter().for_each(run);
    } else {
        (0..units).for_each(run);
    }
}

/// `out`'s base pointer, shared by work units that write disjoint rectangles.
#[derive(Clone, Copy)]
struct Target {
    ptr: *mut f32,
}
// SAFETY: each work unit writes only its own rectangle (see `matmul_transposed`).
unsafe impl Send for Target {}
unsafe impl Sync for Target {}

/// Fills `out[rows][cols]`.
///
/// # Safety
/// `rows` × `cols` lies inside `out` (m×n) and no other thread writes it meanwhile;
/// `Path::Simd` only where the CPU has it.
#[allow(clippy::too_many_arguments)]
unsafe fn tile(
    path: Path,
    x: &[f32],
    k: usize,
    w: Weights,
    n: usize,
    bias: Option<&[f32]>,
    rows: std::ops::Range<usize>,
    cols: std::ops::Range<usize>,
    out: Target,
) {
    #[cfg(target_arch = "x86_64")]
    if path == Path::Simd {
        return simd::tile(x, k, w, n, bias, rows, cols, out);
    }
    let _ = path; // only the portable loop exists off x86_64
    for i in rows {
        let xi = &x[i * k..(i + 1) * k];
        for j in cols.clone() {
            let mut sum = 0.0f32;
            for (t, xv) in xi.iter().enumerate() {
                sum += xv * w.get(j * k + t);
            }
            *out.ptr.add(i * n + j) = sum + bias.map_or(0.0, |b| b[j]);
        }
    }
}

/// GELU over one row of a finished rectangle, in the path's vector width.
fn activate(path: Path, values: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if path == Path::Simd {
        // SAFETY: `Path::Simd` is chosen only where the CPU has these features.
        return unsafe { simd::gelu(values) };
    }
    let _ = path;
    gelu_in_place(values);
}

/// Which loop computes the product.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Path {
    /// AVX2 + FMA + F16C, when the CPU has them.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    Simd,
    /// Plain Rust, everywhere else.
    Portable,
}

impl Path {
    fn best() -> Path {
        #[cfg(target_arch = "x86_64")]
        if simd::available() {
            return Path::Simd;
        }
        Path::Portable
    }
}

#[cfg(target_arch = "x86_64")]
mod simd {
    use std::arch::x86_64::*;
    use std::ops::Range;

    use super::{Target, Weights};

    pub fn available() -> bool {
        is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("fma")
            && is_x86_feature_detected!("f16c")
    }

    /// Eight consecutive values of `w` from `index`, widened to float32.
    #[inline(always)]
    unsafe fn load8(w: Weights, index: usize) -> __m256 {
        match w {
            Weights::F16(bytes) => {
                _mm256_cvtph_ps(_mm_loadu_si128(bytes.as_ptr().add(2 * index).cast()))
            }
            Weights::F32(values) => _mm256_loadu_ps(values.as_ptr().add(index)),
        }
    }

    #[inline(always)]
    unsafe fn horizontal_sum(v: __m256) -> f32 {
        let pair = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        let pair = _mm_add_ps(pair, _mm_movehl_ps(pair, pair));
        _mm_cvtss_f32(_mm_add_ss(pair, _mm_shuffle_ps(pair, pair, 1)))
    }

    /// `super::gelu_in_place`, compiled for 8-wide vectors.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn gelu(values: &mut [f32]) {
        super::gelu_in_place(values);
    }

    /// Columns per strip: the rows of `w` widened to float32 together.
    const STRIP: usize = 4;

    /// As `super::tile`, in register blocks of up to 3 rows × 4 columns: 12 running sums,
    /// three rows of `x` and one vector of `w` fill the 16 AVX registers. Float16 rows of
    /// `w` are widened once per strip into a small buffer that stays in L1 while every
    /// row block reads it (converting inside the inner loop instead, with 5×2 blocks,
    /// measured no faster: 6.1 against 5.9 ms p50 per query).
    ///
    /// # Safety
    /// As `super::tile`, and the CPU has AVX2, FMA and F16C (`available`).
    #[target_feature(enable = "avx2,fma,f16c")]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn tile(
        x: &[f32],
        k: usize,
        w: Weights,
        n: usize,
        bias: Option<&[f32]>,
        rows: Range<usize>,
        cols: Range<usize>,
        out: Target,
    ) {
        let mut strip = Vec::new();
        let mut j = cols.start;
        while j < cols.end {
            let width = (cols.end - j).min(STRIP);
            let (w_strip, first_row) = match w {
                Weights::F16(bytes) => {
                    strip.resize(width * k, 0.0);
                    widen(&bytes[2 * j * k..2 * (j + width) * k], &mut strip);
                    // The next strip is fetched while this one is multiplied: the
                    // widening's loads were a quarter of the kernel's samples, and this
                    // made a query 5–10% faster (prefetching three strips ahead did not
                    // help more).
                    let next = (j + width) * k..(j + 2 * width).min(cols.end) * k;
                    prefetch(bytes.get(2 * next.start..2 * next.end).unwrap_or_default());
                    (Weights::F32(&strip[..width * k]), 0)
                }
                Weights::F32(_) => (w, j),
            };
            let mut i = rows.start;
            while i < rows.end {
                let height = (rows.end - i).min(3);
                let at = Block {
                    x,
                    k,
                    w: w_strip,
                    n,
                    bias,
                    i,
                    w_row: first_row,
                    j,
                    out,
                };
                match (height, width) {
                    (3, 4) => block::<3, 4>(at),
                    (2, 4) => block::<2, 4>(at),
                    (1, 4) => block::<1, 4>(at),
                    _ => {
                        for c in 0..width {
                            let at = Block {
                                w_row: first_row + c,
                                j: j + c,
                                ..at
                            };
                            match height {
                                3 => block::<3, 1>(at),
                                2 => block::<2, 1>(at),
                                _ => block::<1, 1>(at),
                            }
                        }
                    }
                }
                i += height;
            }
            j += width;
        }
    }

    /// Asks for `bytes` to be brought into cache, without waiting for them.
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn prefetch(bytes: &[u8]) {
        for line in bytes.chunks(64) {
            _mm_prefetch::<_MM_HINT_T0>(line.as_ptr().cast());
        }
    }

    /// Float16 bytes → float32, eight at a time (lengths are whole rows of `k`, and a
    /// tail under eight is widened one by one).
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn widen(bytes: &[u8], into: &mut [f32]) {
        let count = into.len();
        let mut t = 0;
        while t + 8 <= count {
            let v = _mm256_cvtph_ps(_mm_loadu_si128(bytes.as_ptr().add(2 * t).cast()));
            _mm256_storeu_ps(into.as_mut_ptr().add(t), v);
            t += 8;
        }
        for tail in t..count {
            into[tail] = half::f16::from_le_bytes([bytes[2 * tail], bytes[2 * tail + 1]]).to_f32();
        }
    }

    /// Where one register block reads and writes: rows `i..` of `x`, rows `w_row..` of
    /// `w`, output columns `j..`.
    #[derive(Clone, Copy)]
    struct Block<'a> {
        x: &'a [f32],
        k: usize,
        w: Weights<'a>,
        n: usize,
        bias: Option<&'a [f32]>,
        i: usize,
        w_row: usize,
        j: usize,
        out: Target,
    }

    /// `out[i..i+R][j..j+C]`.
    // Index loops on purpose: `r` and `c` are the block's row and column, with constant
    // bounds, so they unroll and every sum stays in a register.
    #[allow(clippy::needless_range_loop)]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn block<const R: usize, const C: usize>(at: Block) {
        let Block {
            x,
            k,
            w,
            n,
            bias,
            i,
            w_row,
            j,
            out,
        } = at;
        let xp = x.as_ptr();
        let mut sums = [[_mm256_setzero_ps(); C]; R];
        let mut t = 0;
        while t + 8 <= k {
            let mut xs = [_mm256_setzero_ps(); R];
            for r in 0..R {
                xs[r] = _mm256_loadu_ps(xp.add((i + r) * k + t));
            }
            for c in 0..C {
                let wv = load8(w, (w_row + c) * k + t);
                for r in 0..R {
                    sums[r][c] = _mm256_fmadd_ps(xs[r], wv, sums[r][c]);
                }
            }
            t += 8;
        }
        for r in 0..R {
            for c in 0..C {
                let mut sum = horizontal_sum(sums[r][c]);
                for tail in t..k {
                    sum += *xp.add((i + r) * k + tail) * w.get((w_row + c) * k + tail);
                }
                let b = bias.map_or(0.0, |b| b[j + c]);
                *out.ptr.add((i + r) * n + j + c) = sum + b;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic values in [-1, 1) (no RNG crate needed for a shape test).
    fn values(count: usize, seed: u32) -> Vec<f32> {
        let mut state = seed.wrapping_mul(2_654_435_761).max(1);
        (0..count)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                (state as f32 / u32::MAX as f32) * 2.0 - 1.0
            })
            .collect()
    }

    fn naive(x: &[f32], m: usize, k: usize, w: &[f32], n: usize, bias: &[f32]) -> Vec<f32> {
        let mut out = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                let dot: f64 = (0..k)
                    .map(|t| x[i * k + t] as f64 * w[j * k + t] as f64)
                    .sum();
                out[i * n + j] = dot as f32 + bias[j];
            }
        }
        out
    }

    fn to_f16_bytes(values: &[f32]) -> Vec<u8> {
        values
            .iter()
            .flat_map(|v| half::f16::from_f32(*v).to_le_bytes())
            .collect()
    }

    fn assert_close(got: &[f32], want: &[f32]) {
        assert_eq!(got.len(), want.len());
        for (index, (g, w)) in got.iter().zip(want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-4 * (1.0 + w.abs()),
                "at {index}: {g} vs {w}"
            );
        }
    }

    /// Shapes that hit every register block, a k tail, and the parallel split.
    const SHAPES: [(usize, usize, usize); 5] = [
        (1, 8, 1),
        (17, 384, 385),
        (5, 13, 7),
        (50, 40, 130),
        (130, 96, 70),
    ];

    fn check_every_shape(path: Path) {
        for (m, k, n) in SHAPES {
            let x = values(m * k, 1);
            let bias = values(n, 3);
            // Weights rounded to f16 first, so the f16 and f32 paths have one answer.
            let w16 = to_f16_bytes(&values(n * k, 2));
            let w32: Vec<f32> = (0..n * k).map(|i| Weights::F16(&w16).get(i)).collect();
            let want = naive(&x, m, k, &w32, n, &bias);
            for w in [Weights::F16(&w16), Weights::F32(&w32)] {
                let mut out = vec![f32::NAN; m * n];
                let then = Epilogue {
                    bias: Some(&bias),
                    gelu: false,
                };
                matmul_on(path, &x, (m, k), w, n, then, &mut out);
                assert_close(&out, &want);
            }
        }
    }

    #[test]
    fn the_best_loop_matches_the_naive_product_in_every_shape() {
        check_every_shape(Path::best());
    }

    #[test]
    fn the_portable_loop_matches_the_naive_product_in_every_shape() {
        check_every_shape(Path::Portable);
    }
}
