/* C reference kernels for the histogram pass, built by scripts/bench_c_reference.py.
 *
 * Per query: counts of database codes by Hamming distance (no grades), WORDS 64-bit words per
 * code, row-major. Two kernels, both taking queries in pairs:
 *   hist_pairs_scalar: each code loaded once per pair, scalar popcnt (what compilers make of
 *     __builtin_popcountll);
 *   hist_tiled_avx2: tiles of TILE codes copied to word-major order, distances of four codes per
 *     256-bit vector with a nibble-table popcount (vpshufb, Mula et al.), byte counts summed over
 *     the words before one vpsadbw, then scalar increments (the "v1b" kernel family).
 */
#include <stdint.h>
#include <string.h>
#ifdef __AVX2__
#include <immintrin.h>
#endif

#ifndef WORDS
#define WORDS 4
#endif
#define N_DIST (64 * WORDS + 1)
#define TILE 4096

static inline int64_t distance(const uint64_t *a, const uint64_t *x) {
    int64_t d = 0;
    for (int w = 0; w < WORDS; w++) d += __builtin_popcountll(a[w] ^ x[w]);
    return d;
}

/* hist: (n_queries, N_DIST) int64, zero on entry; n_queries even */
void hist_pairs_scalar(const uint64_t *queries, const uint64_t *db, int64_t n_db, int64_t n_queries, int64_t *hist) {
    static int32_t c0[N_DIST], c1[N_DIST];
    for (int64_t i = 0; i < n_queries; i += 2) {
        const uint64_t *a = queries + i * WORDS, *b = queries + (i + 1) * WORDS;
        memset(c0, 0, sizeof c0);
        memset(c1, 0, sizeof c1);
        for (int64_t j = 0; j < n_db; j++) {
            const uint64_t *x = db + j * WORDS;
            c0[distance(a, x)]++;
            c1[distance(b, x)]++;
        }
        for (int d = 0; d < N_DIST; d++) {
            hist[i * N_DIST + d] += c0[d];
            hist[(i + 1) * N_DIST + d] += c1[d];
        }
    }
}

/* returns 0 where the build has no AVX2 */
int hist_tiled_avx2(const uint64_t *queries, const uint64_t *db, int64_t n_db, int64_t n_queries, int64_t *hist) {
#ifdef __AVX2__
    static uint64_t tile[WORDS][TILE] __attribute__((aligned(32)));
    static uint64_t d0[TILE] __attribute__((aligned(32))), d1[TILE] __attribute__((aligned(32)));
    const __m256i lut = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,
                                         0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
    const __m256i low = _mm256_set1_epi8(0x0f);
    for (int64_t lo = 0; lo < n_db; lo += TILE) {
        int64_t m = n_db - lo < TILE ? n_db - lo : TILE;
        for (int64_t t = 0; t < m; t++)
            for (int w = 0; w < WORDS; w++) tile[w][t] = db[(lo + t) * WORDS + w];
        for (int64_t t = m; t < (m + 3) / 4 * 4; t++)
            for (int w = 0; w < WORDS; w++) tile[w][t] = 0;
        for (int64_t i = 0; i < n_queries; i += 2) {
            __m256i qa[WORDS], qb[WORDS];
            for (int w = 0; w < WORDS; w++) {
                qa[w] = _mm256_set1_epi64x((long long)queries[i * WORDS + w]);
                qb[w] = _mm256_set1_epi64x((long long)queries[(i + 1) * WORDS + w]);
            }
            for (int64_t t = 0; t < m; t += 4) {
                __m256i a0 = _mm256_setzero_si256(), a1 = _mm256_setzero_si256();
                for (int w = 0; w < WORDS; w++) {
                    __m256i y = _mm256_load_si256((const __m256i *)&tile[w][t]);
                    __m256i x = _mm256_xor_si256(y, qa[w]);
                    a0 = _mm256_add_epi8(a0, _mm256_add_epi8(_mm256_shuffle_epi8(lut, _mm256_and_si256(x, low)),
                                                             _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(x, 4), low))));
                    x = _mm256_xor_si256(y, qb[w]);
                    a1 = _mm256_add_epi8(a1, _mm256_add_epi8(_mm256_shuffle_epi8(lut, _mm256_and_si256(x, low)),
                                                             _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(x, 4), low))));
                }
                _mm256_store_si256((__m256i *)&d0[t], _mm256_sad_epu8(a0, _mm256_setzero_si256()));
                _mm256_store_si256((__m256i *)&d1[t], _mm256_sad_epu8(a1, _mm256_setzero_si256()));
            }
            int64_t *h0 = hist + i * N_DIST, *h1 = hist + (i + 1) * N_DIST;
            for (int64_t t = 0; t < m; t++) {
                h0[d0[t]]++;
                h1[d1[t]]++;
            }
        }
    }
    return 1;
#else
    (void)queries; (void)db; (void)n_db; (void)n_queries; (void)hist;
    return 0;
#endif
}
