/* xnpu.semantics.fixed_point_loops: the loops of the integer semantics that numpy cannot run at
 * memory speed, compiled when xnpu is installed (pyproject.toml's ext-modules).
 *
 * Each kernel is the rule its fixed_point caller cites, written as the loop the rule describes;
 * they are the one implementation of that arithmetic, not a faster copy of a numpy one. Every
 * float operation is IEEE double (or the values' float type), in the order written, as numpy
 * would do it: built with -ffp-contract=off (no fused multiply-add) and without -ffast-math.
 * Integer sums wrap as two's complement (unsigned arithmetic): the callers choose a width that
 * holds them. The arguments are checked at the boundary (core/loop_arguments.h): any strides,
 * any integer element type where the docstrings say so; the loops release the GIL. */

#include "loop_arguments.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The element types a kernel is written for, as (C type, name, ...) lists for X-macros.
 * Two lists, so that one may expand inside the other. */
#define INTEGER_TYPES(X, ...)                                                                                 \
    X(int8_t, int8, __VA_ARGS__) X(uint8_t, uint8, __VA_ARGS__) X(int16_t, int16, __VA_ARGS__)               \
    X(uint16_t, uint16, __VA_ARGS__) X(int32_t, int32, __VA_ARGS__) X(uint32_t, uint32, __VA_ARGS__)         \
    X(int64_t, int64, __VA_ARGS__) X(uint64_t, uint64, __VA_ARGS__)
#define NUMERIC_TYPES(X, ...)                                                                                 \
    X(int8_t, int8, __VA_ARGS__) X(uint8_t, uint8, __VA_ARGS__) X(int16_t, int16, __VA_ARGS__)               \
    X(uint16_t, uint16, __VA_ARGS__) X(int32_t, int32, __VA_ARGS__) X(uint32_t, uint32, __VA_ARGS__)         \
    X(int64_t, int64, __VA_ARGS__) X(uint64_t, uint64, __VA_ARGS__) X(float, float32, __VA_ARGS__)           \
    X(double, float64, __VA_ARGS__)

/* Python's min(max(x, low), high), as the rules write a clamp. */
static inline double clamp(double x, double low, double high) {
    x = low > x ? low : x;
    return high < x ? high : x;
}

/* Whether every value of [low, high] converts to the integer type exactly (a clamp's result
 * is then representable: the conversions below are defined). */
static int bounds_fit(double low, double high, element_type type, const char *name) {
    static const double lowest[] = {-128.0, 0.0, -32768.0, 0.0, -2147483648.0, 0.0, -9223372036854775808.0, 0.0};
    static const double beyond[] = {128.0, 256.0, 32768.0, 65536.0, 2147483648.0, 4294967296.0,
                                    9223372036854775808.0, 18446744073709551616.0};
    if (low >= lowest[type] && low < beyond[type] && high >= lowest[type] && high < beyond[type]) return 0;
    PyErr_Format(PyExc_ValueError, "the bounds [%g, %g] do not fit %s's %s", low, high, name, ELEMENT_NAMES[type]);
    return -1;
}

/* The first `c` values of `row` (each `width` bytes) repeated to `tile` values, doubling the copy. */
static void repeat_row(char *row, Py_ssize_t c, Py_ssize_t tile, size_t width) {
    for (Py_ssize_t copied = c; copied < tile; copied += copied)
        memcpy(row + copied * width, row, (size_t)(tile - copied < copied ? tile - copied : copied) * width);
}

/* ---- depthwise_sums ---------------------------------------------------------------------- */

/* Channels along a row of an image, or of several adjacent pixels: the loops below run along
 * RUN or more values at once where the arrays allow (a row of 16 channels is too short for
 * gcc's vector loops, which take 32 int8 values a step). Constants per channel are repeated to
 * a `tile` of whole channel rows (a multiple of C, at least RUN), so that value t of a run of
 * whole pixels has channel t mod C: the same constant as channel by channel. 1024 values: a
 * depthwise block of 144 channels is 7 pixels (2 with 256), and a vector loop's set-up and
 * remainder are paid per tap and block; a block's int32 sums (4 KB) stay in the L1 cache. */
#ifndef RUN
#define RUN 1024
#endif

static Py_ssize_t tile_of(Py_ssize_t channels) {
    return channels == 0 ? 0 : channels * ((RUN + channels - 1) / channels);
}

#define MOST_PHASES 8 /* the largest stride along W whose input rows are split by phase */

typedef struct {
    Py_ssize_t n, h, w, c, kh, kw, oh, ow, tile;
    long long sh, sw, dh, dw, pad_top, pad_left;
    const Py_ssize_t *x_strides, *sums_strides;
    void *phases; /* KH x W x C values of x's type, for a stride along W of 2..MOST_PHASES; or NULL */
} depthwise_shape;

/* sums[b, i, j, :] = sum over the taps inside the input of x[b, y, z, :] * weight[u, v, :], the
 * weights T already in int16 or the sums' type S (U its unsigned twin, in which the sums wrap:
 * their order cannot change them), each tap's row repeated to `tile` values. Where x and sums
 * hold each row's pixels adjacent and the stride along W is 1, a tap adds a run of input pixels
 * (those inside the input) to a block of output pixels at once. */
#define DEFINE_DEPTHWISE(X, x_name, S, U, T, PRODUCT)                                                         \
    static inline __attribute__((always_inline)) void multiply_add_##x_name##_##S##_##T(                      \
        S *restrict to, const X *restrict from, const T *restrict taps, const Py_ssize_t count) {             \
        for (Py_ssize_t t = 0; t < count; t++) to[t] = (S)((U)to[t] + PRODUCT(from[t], taps[t]));             \
    }                                                                                                         \
    /* three taps of a kernel row at once: the sums are read and written once for the three */             \
    static inline __attribute__((always_inline)) void multiply_add3_##x_name##_##S##_##T(                     \
        S *restrict to, const X *restrict from0, const X *restrict from1, const X *restrict from2,            \
        const T *restrict taps0, const T *restrict taps1, const T *restrict taps2, const Py_ssize_t count) {  \
        for (Py_ssize_t t = 0; t < count; t++)                                                                \
            to[t] = (S)((U)to[t] + PRODUCT(from0[t], taps0[t]) + PRODUCT(from1[t], taps1[t]) +                \
                        PRODUCT(from2[t], taps2[t]));                                                         \
    }                                                                                                         \
    LOOP_CLONES static void depthwise_##x_name##_##S##_##T(const depthwise_shape *d, const char *x, const void *weights, \
                                                           char *sums) {                                      \
        const T *weight = weights;                                                                            \
        const Py_ssize_t *xs = d->x_strides, *ss = d->sums_strides, c = d->c, kh = d->kh, kw = d->kw;         \
        const long long sw = d->sw, dw = d->dw, pad_left = d->pad_left, w = d->w;                             \
        const int adjacent = xs[3] == (Py_ssize_t)sizeof(X) && ss[3] == (Py_ssize_t)sizeof(S);                \
        const int runs = adjacent && c > 0 && xs[2] == c * (Py_ssize_t)sizeof(X) && ss[2] == c * (Py_ssize_t)sizeof(S) &&  \
                         (sw == 1 || (sw > 1 && sw <= MOST_PHASES && d->phases != NULL));                     \
        /* with a stride sw > 1 an input row is copied as its sw phases (the pixels z = p mod sw, in     \
         * order): output pixel j reads pixel j + q of phase p, where j * sw + shift = (j + q) * sw + p */  \
        long long phase_start[MOST_PHASES] = {0}, phase_count[MOST_PHASES] = {0};                             \
        if (runs)                                                                                             \
            for (long long p = 0; p < sw; p++) {                                                              \
                phase_count[p] = p < w ? (w - p + sw - 1) / sw : 0;                                           \
                phase_start[p] = p == 0 ? 0 : phase_start[p - 1] + phase_count[p - 1];                        \
            }                                                                                                 \
        X *const phases = d->phases;                                                                          \
        for (Py_ssize_t b = 0; b < d->n; b++)                                                                 \
            for (Py_ssize_t i = 0; i < d->oh; i++) {                                                          \
                char *out_row = sums + b * ss[0] + i * ss[1];                                                 \
                const char *in_rows = x + b * xs[0];                                                          \
                if (runs && sw > 1)                                                                           \
                    for (Py_ssize_t u = 0; u < kh; u++) {                                                     \
                        const long long y = i * d->sh + u * d->dh - d->pad_top;                               \
                        if (y < 0 || y >= d->h) continue;                                                     \
                        for (long long p = 0; p < sw; p++)                                                    \
                            for (long long m = 0; m < phase_count[p]; m++) {                                  \
                                const X *from = (const X *)(in_rows + y * xs[1] + (p + m * sw) * xs[2]);      \
                                X *to = phases + (u * w + phase_start[p] + m) * c;                            \
                                for (Py_ssize_t k = 0; k < c; k++) to[k] = from[k];                           \
                            }                                                                                 \
                    }                                                                                         \
                if (runs) { /* blocks of output pixels that stay in the L1 cache while every tap adds */      \
                    const Py_ssize_t block = d->tile / c;                                                     \
                    for (Py_ssize_t start = 0; start < d->ow; start += block) {                               \
                        const Py_ssize_t end = d->ow - start < block ? d->ow : start + block;                 \
                        S *to = (S *)(out_row + start * ss[2]);                                               \
                        for (Py_ssize_t t = 0; t < (end - start) * c; t++) to[t] = 0;                         \
                        for (Py_ssize_t u = 0; u < kh; u++) {                                                 \
                            const long long y = i * d->sh + u * d->dh - d->pad_top;                           \
                            if (y < 0 || y >= d->h) continue;                                                 \
                            const X *row = sw == 1 ? (const X *)(in_rows + y * xs[1]) : phases + u * w * c;   \
                            if (kw == 3) { /* the output pixels all three taps reach, the three at once */  \
                                long long firsts[3], lasts[3], offsets[3], low = start, high = end;           \
                                for (int v = 0; v < 3; v++) {                                                 \
                                    const long long shift = v * dw - pad_left;                                \
                                    long long p = shift % sw;                                                 \
                                    p = p < 0 ? p + sw : p;                                                   \
                                    const long long q = (shift - p) / sw;                                     \
                                    firsts[v] = start > -q ? start : -q;                                      \
                                    lasts[v] = phase_count[p] - q < end ? phase_count[p] - q : end;           \
                                    offsets[v] = phase_start[p] + q; /* input pixel of output pixel 0 */      \
                                    low = firsts[v] > low ? firsts[v] : low;                                  \
                                    high = lasts[v] < high ? lasts[v] : high;                                 \
                                }                                                                             \
                                if (low < high) {                                                             \
                                    const T *taps = weight + u * 3 * d->tile;                                 \
                                    for (int v = 0; v < 3; v++) { /* the pixels only some taps reach */       \
                                        if (firsts[v] < low)                                                  \
                                            multiply_add_##x_name##_##S##_##T(                                \
                                                to + (firsts[v] - start) * c, row + (offsets[v] + firsts[v]) * c, \
                                                taps + v * d->tile + (firsts[v] - start) * c, (low - firsts[v]) * c); \
                                        if (high < lasts[v])                                                  \
                                            multiply_add_##x_name##_##S##_##T(                                \
                                                to + (high - start) * c, row + (offsets[v] + high) * c,       \
                                                taps + v * d->tile + (high - start) * c, (lasts[v] - high) * c); \
                                    }                                                                         \
                                    multiply_add3_##x_name##_##S##_##T(                                       \
                                        to + (low - start) * c, row + (offsets[0] + low) * c,                 \
                                        row + (offsets[1] + low) * c, row + (offsets[2] + low) * c,           \
                                        taps + (low - start) * c, taps + d->tile + (low - start) * c,         \
                                        taps + 2 * d->tile + (low - start) * c, (high - low) * c);            \
                                    continue;                                                                 \
                                }                                                                             \
                            }                                                                                 \
                            for (Py_ssize_t v = 0; v < kw; v++) {                                             \
                                const long long shift = v * dw - pad_left;                                    \
                                long long p = shift % sw;                                                     \
                                p = p < 0 ? p + sw : p;                                                       \
                                const long long q = (shift - p) / sw;                                         \
                                const long long first = start > -q ? start : -q;                              \
                                const long long last = phase_count[p] - q < end ? phase_count[p] - q : end;   \
                                if (first >= last) continue;                                                  \
                                multiply_add_##x_name##_##S##_##T(                                            \
                                    to + (first - start) * c, row + (phase_start[p] + first + q) * c,         \
                                    weight + (u * kw + v) * d->tile + (first - start) * c, (last - first) * c); \
                            }                                                                                 \
                        }                                                                                     \
                    }                                                                                         \
                    continue;                                                                                 \
                }                                                                                             \
                for (Py_ssize_t j = 0; j < d->ow; j++) {                                                      \
                    char *row = out_row + j * ss[2];                                                          \
                    for (Py_ssize_t k = 0; k < c; k++) *(S *)(row + k * ss[3]) = 0;                           \
                    for (Py_ssize_t u = 0; u < kh; u++)       {                                                  \
                        const long long y = i * d->sh + u * d->dh - d->pad_top;                               \
                        if (y < 0 || y >= d->h) continue;                                                     \
                        for (Py_ssize_t v = 0; v < kw; v++)       {                                              \
                            const long long z = j * sw + v * dw - pad_left;                                   \
                            if (z < 0 || z >= w) continue;                                                    \
                            const char *pixel = in_rows + y * xs[1] + z * xs[2];                              \
                            const T *taps = weight + (u * kw + v) * d->tile;                                  \
                            if (adjacent) {                                                                   \
                                multiply_add_##x_name##_##S##_##T((S *)row, (const X *)pixel, taps, c);       \
                            } else {                                                                          \
                                for (Py_ssize_t k = 0; k < c; k++) {                                          \
                                    S *to = (S *)(row + k * ss[3]);                                           \
                                    const X value = *(const X *)(pixel + k * xs[3]);                          \
                                    *to = (S)((U)*to + PRODUCT(value, taps[k]));                              \
                                }                                                                             \
                            }                                                                                 \
                        }                                                                                     \
                    }                                                                                         \
                }                                                                                             \
            }                                                                                                 \
    }

/* A product in the sums' width, wrapping; or exact in int32 where both factors fit int16 (gcc
 * then multiplies 16-bit lanes, twice as many a step as 32-bit ones). */
#define PRODUCT_IN_S32(a, b) ((uint32_t)(int32_t)(a) * (uint32_t)(b))
#define PRODUCT_IN_S64(a, b) ((uint64_t)(int64_t)(a) * (uint64_t)(b))
#define PRODUCT_16_TO_32(a, b) (uint32_t)((int32_t)(a) * (int32_t)(b))
#define PRODUCT_16_TO_64(a, b) (uint64_t)(int64_t)((int32_t)(a) * (int32_t)(b))
#define DEFINE_DEPTHWISE_BOTH_WIDTHS(X, x_name, _)                                                            \
    DEFINE_DEPTHWISE(X, x_name, int32_t, uint32_t, int32_t, PRODUCT_IN_S32)                                   \
    DEFINE_DEPTHWISE(X, x_name, int64_t, uint64_t, int64_t, PRODUCT_IN_S64)
INTEGER_TYPES(DEFINE_DEPTHWISE_BOTH_WIDTHS, )
DEFINE_DEPTHWISE(int8_t, int8, int32_t, uint32_t, int16_t, PRODUCT_16_TO_32)
DEFINE_DEPTHWISE(int8_t, int8, int64_t, uint64_t, int16_t, PRODUCT_16_TO_64)
DEFINE_DEPTHWISE(uint8_t, uint8, int32_t, uint32_t, int16_t, PRODUCT_16_TO_32)
DEFINE_DEPTHWISE(uint8_t, uint8, int64_t, uint64_t, int16_t, PRODUCT_16_TO_64)
DEFINE_DEPTHWISE(int16_t, int16, int32_t, uint32_t, int16_t, PRODUCT_16_TO_32)
DEFINE_DEPTHWISE(int16_t, int16, int64_t, uint64_t, int16_t, PRODUCT_16_TO_64)

typedef void (*depthwise_kernel)(const depthwise_shape *, const char *, const void *, char *);
#define DEPTHWISE_ENTRY(X, x_name, S) depthwise_##x_name##_##S##_##S,
static const depthwise_kernel DEPTHWISE32[] = {INTEGER_TYPES(DEPTHWISE_ENTRY, int32_t)};
static const depthwise_kernel DEPTHWISE64[] = {INTEGER_TYPES(DEPTHWISE_ENTRY, int64_t)};
/* with int16 taps, for x of int8, uint8 and int16 (the first three types) */
static const depthwise_kernel DEPTHWISE32_NARROW[] = {depthwise_int8_int32_t_int16_t, depthwise_uint8_int32_t_int16_t,
                                                      depthwise_int16_int32_t_int16_t};
static const depthwise_kernel DEPTHWISE64_NARROW[] = {depthwise_int8_int64_t_int16_t, depthwise_uint8_int64_t_int16_t,
                                                      depthwise_int16_int64_t_int16_t};

/* One row of C weights (`stride` bytes apart) as int64 (their low 64 bits): a loop
 * per element type, the type decided once per row. */
#define DEFINE_WEIGHT_ROW(T, name, _)                                                                         \
    static void weight_row_##name(const char *from, Py_ssize_t stride, Py_ssize_t c, int64_t *to) {          \
        for (Py_ssize_t k = 0; k < c; k++) to[k] = (int64_t) * (const T *)(from + k * stride);                \
    }
INTEGER_TYPES(DEFINE_WEIGHT_ROW, )
typedef void (*weight_row_kernel)(const char *, Py_ssize_t, Py_ssize_t, int64_t *);
#define WEIGHT_ROW_ENTRY(T, name, _) weight_row_##name,
static const weight_row_kernel WEIGHT_ROW[] = {INTEGER_TYPES(WEIGHT_ROW_ENTRY, )};

/* The weights (KH x KW x C, any integer type and strides) as KH * KW rows of C int64 values, or
 * NULL with MemoryError set. */
static int64_t *weights_of(const array_argument *weight) {
    const Py_ssize_t kh = weight->view.shape[0], kw = weight->view.shape[1], c = weight->view.shape[2];
    size_t count;
    if (__builtin_mul_overflow((size_t)kh, (size_t)kw, &count) || __builtin_mul_overflow(count, (size_t)c, &count) ||
        count > PY_SSIZE_T_MAX / sizeof(int64_t))
        return (PyErr_NoMemory(), NULL);
    int64_t *values = malloc(count * sizeof(int64_t) + 1);
    if (values == NULL) return (PyErr_NoMemory(), NULL);
    const Py_ssize_t *s = weight->view.strides;
    for (Py_ssize_t u = 0; u < kh; u++)
        for (Py_ssize_t v = 0; v < kw; v++)
            WEIGHT_ROW[weight->type]((const char *)weight->view.buf + u * s[0] + v * s[1], s[2], c,
                                     values + (u * kw + v) * c);
    return values;
}

/* The weights (`count` taps of C int64 values) in int16 (where `width` is 2: every weight fits) or
 * the sums' type (they wrap as the sums do), each tap's C channels repeated to `tile` values. */
static void *weights_as(const int64_t *values, Py_ssize_t count, Py_ssize_t c, size_t width, Py_ssize_t tile) {
    size_t bytes;
    if (__builtin_mul_overflow((size_t)count, (size_t)tile, &bytes) || __builtin_mul_overflow(bytes, width, &bytes))
        return PyErr_NoMemory();
    void *taps = malloc(bytes + 1);
    if (taps == NULL) return PyErr_NoMemory();
    for (Py_ssize_t tap = 0; tap < count; tap++) {
        char *row = (char *)taps + tap * tile * width;
        const int64_t *from = values + tap * c;
        if (width == 2)
            for (Py_ssize_t k = 0; k < c; k++) ((int16_t *)row)[k] = (int16_t)from[k];
        else if (width == 4)
            for (Py_ssize_t k = 0; k < c; k++) ((int32_t *)row)[k] = (int32_t)from[k];
        else
            memcpy(row, from, (size_t)c * sizeof(int64_t));
        repeat_row(row, c, tile, width);
    }
    return taps;
}

/* Whether every one of `count` weights fits int16 (a uint64 weight read as negative does not). */
static int weights_fit_int16(const int64_t *values, size_t count, element_type type) {
    if (type == INT8 || type == UINT8 || type == INT16) return 1;
    if (type == UINT64)
        for (size_t t = 0; t < count; t++)
            if ((uint64_t)values[t] > INT16_MAX) return 0;
    int fits = 1;
    for (size_t t = 0; t < count; t++) fits &= values[t] >= INT16_MIN && values[t] <= INT16_MAX;
    return fits;
}

static PyObject *depthwise_sums(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (require_arguments(nargs, 9, "depthwise_sums") < 0) return NULL;
    array_argument arrays[3];
    array_argument *x = &arrays[0], *weight = &arrays[1], *sums = &arrays[2];
    x->held = weight->held = sums->held = 0;
    depthwise_shape d;
    long long *parameters[] = {&d.sh, &d.sw, &d.dh, &d.dw, &d.pad_top, &d.pad_left};
    static const char *const names[] = {"sh", "sw", "dh", "dw", "pad_top", "pad_left"};
    for (int p = 0; p < 6; p++)
        if (take_integer(args[2 + p], names[p], -(1LL << 31), (1LL << 31) - 1, parameters[p]) < 0) return NULL;
    if (take_array(args[0], "x", 4, 0, x) < 0 || take_array(args[1], "weight", 3, 0, weight) < 0 ||
        take_array(args[8], "sums", 4, 1, sums) < 0)
        goto fail;
    if (!is_integer_type(x->type) || !is_integer_type(weight->type)) {
        PyErr_SetString(PyExc_TypeError, "x and weight must be integer arrays");
        goto fail;
    }
    if (sums->type != INT32 && sums->type != INT64) {
        PyErr_Format(PyExc_TypeError, "sums must be int32 or int64, not %s", ELEMENT_NAMES[sums->type]);
        goto fail;
    }
    const Py_ssize_t *xshape = x->view.shape, *wshape = weight->view.shape, *sshape = sums->view.shape;
    if (sshape[0] != xshape[0] || wshape[2] != xshape[3] || sshape[3] != xshape[3]) {
        PyErr_SetString(PyExc_ValueError,
                        "depthwise_sums: x (N x H x W x C), weight (KH x KW x C) and sums (N x OH x OW x C) disagree");
        goto fail;
    }
    d.n = xshape[0], d.h = xshape[1], d.w = xshape[2], d.c = xshape[3];
    d.kh = wshape[0], d.kw = wshape[1], d.oh = sshape[1], d.ow = sshape[2], d.tile = tile_of(d.c);
    d.x_strides = x->view.strides, d.sums_strides = sums->view.strides;
    if (d.kh > (1LL << 31) || d.kw > (1LL << 31)) {
        PyErr_SetString(PyExc_ValueError, "depthwise_sums: a kernel of more than 2^31 taps along an axis");
        goto fail;
    }
    d.phases = NULL;
    size_t phase_bytes;
    if (d.sw > 1 && d.sw <= MOST_PHASES && !__builtin_mul_overflow((size_t)d.kh, (size_t)d.w, &phase_bytes) &&
        !__builtin_mul_overflow(phase_bytes, (size_t)d.c * (size_t)x->view.itemsize, &phase_bytes) &&
        phase_bytes <= ((size_t)1 << 26))
        d.phases = malloc(phase_bytes + 1); /* NULL: each output pixel on its own */
    const int wide = sums->type == INT64;
    const Py_ssize_t tap_count = d.kh * d.kw;
    int64_t *values = weights_of(weight);
    if (values == NULL) {
        free(d.phases);
        goto fail;
    }
    const int narrow = x->type <= INT16 && weights_fit_int16(values, (size_t)(tap_count * d.c), weight->type);
    void *taps = weights_as(values, tap_count, d.c, narrow ? 2 : wide ? 8 : 4, d.tile);
    free(values);
    if (taps == NULL) {
        free(d.phases);
        goto fail;
    }
    const depthwise_kernel kernel = narrow ? (wide ? DEPTHWISE64_NARROW : DEPTHWISE32_NARROW)[x->type]
                                           : (wide ? DEPTHWISE64 : DEPTHWISE32)[x->type];
    Py_BEGIN_ALLOW_THREADS
    kernel(&d, x->view.buf, taps, sums->view.buf);
    Py_END_ALLOW_THREADS
    free(taps);
    free(d.phases);
    return release_and_return(arrays, 3, args[8]);
fail:
    release_arrays(arrays, 3);
    return NULL;
}

/* ---- table_lookup ------------------------------------------------------------------------ */

/* out[...] = table[byte of q[...]] along `count` values, `q_step` and `out_step` bytes apart: each
 * value read before it is written, in the order of the indices (out may be q). */
static inline __attribute__((always_inline)) void look_up_run(const char *from, Py_ssize_t q_step, char *to,
                                                              Py_ssize_t out_step, const int8_t *table,
                                                              Py_ssize_t count) {
    if (q_step == 1 && out_step == 1)
        for (Py_ssize_t k = 0; k < count; k++) to[k] = (char)table[(uint8_t)from[k]];
    else
        for (Py_ssize_t k = 0; k < count; k++) to[k * out_step] = (char)table[(uint8_t)from[k * q_step]];
}

LOOP_CLONES static void look_up(const array_argument *q, const int8_t *table, const array_argument *out) {
    const Py_ssize_t *shape = q->view.shape, *qs = q->view.strides, *os = out->view.strides;
    /* a row's pixels at once where both hold them adjacent, channels adjacent */
    const int rows = qs[3] == 1 && os[3] == 1 && qs[2] == shape[3] && os[2] == shape[3];
    for (Py_ssize_t b = 0; b < shape[0]; b++)
        for (Py_ssize_t i = 0; i < shape[1]; i++) {
            const char *from = (const char *)q->view.buf + b * qs[0] + i * qs[1];
            char *to = (char *)out->view.buf + b * os[0] + i * os[1];
            if (rows) {
                look_up_run(from, 1, to, 1, table, shape[2] * shape[3]);
                continue;
            }
            for (Py_ssize_t j = 0; j < shape[2]; j++)
                look_up_run(from + j * qs[2], qs[3], to + j * os[2], os[3], table, shape[3]);
        }
}

static PyObject *table_lookup(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (require_arguments(nargs, 3, "table_lookup") < 0) return NULL;
    array_argument arrays[3];
    array_argument *q = &arrays[0], *table = &arrays[1], *out = &arrays[2];
    q->held = table->held = out->held = 0;
    if (take_array(args[0], "q", 4, 0, q) < 0 || take_array(args[1], "table", 1, 0, table) < 0 ||
        take_array(args[2], "out", 4, 1, out) < 0 || require_type(q, "q", INT8) < 0 ||
        require_type(table, "table", INT8) < 0 || require_type(out, "out", INT8) < 0 ||
        require_same_shape(q, "q", out, "out") < 0 || require_vector(table, "table", 256) < 0)
        goto fail;
    int8_t entries[256];
    memcpy(entries, table->view.buf, sizeof entries);
    Py_BEGIN_ALLOW_THREADS
    look_up(q, entries, out);
    Py_END_ALLOW_THREADS
    return release_and_return(arrays, 3, args[2]);
fail:
    release_arrays(arrays, 3);
    return NULL;
}

/* ---- requantize -------------------------------------------------------------------------- */

typedef struct {
    const double *factor, *constant, *bias;  /* C channels repeated to `tile` values; bias NULL: none */
    Py_ssize_t tile;
    double low, high;
    double limit;  /* 2^31 - 1, a value the loops read: as a constant, gcc's code for the clamp is 2x slower */
} requantize_constants;

/* out[..., k] = clip(floor(a * factor[k] + constant[k]), low, high), a = acc[..., k] or, with a
 * bias, clip(acc[..., k] + bias[k], -(2^31 - 1), 2^31 - 1), for acc of type A and out of type O:
 * one row of C channels (`acc_step`, `out_step` bytes apart), adjacent ones in their own loop
 * (restrict parameters: gcc vectorizes it). */
#define REQUANTIZE_ELEMENT(value, k)                                                                          \
    do {                                                                                                      \
        double a = (double)(value);                                                                           \
        if (with_bias) a = clamp(a + bias[k], -limit, limit);                                                 \
        result = clamp(floor(a * factor[k] + constant[k]), low, high);                                        \
    } while (0)
#define DEFINE_REQUANTIZE(O, out_name, A, acc_name)                                                           \
    static inline __attribute__((always_inline)) void requantize_adjacent_##acc_name##_##out_name(            \
        const A *restrict acc, const double *restrict factor, const double *restrict constant,                \
        const double *restrict bias, const double low, const double high, const double limit, O *restrict out,   \
        const Py_ssize_t c, const int with_bias) {                                                                                \
        for (Py_ssize_t k = 0; k < c; k++) {                                                                  \
            double result;                                                                                    \
            REQUANTIZE_ELEMENT(acc[k], k);                                                                    \
            out[k] = (O)result;                                                                               \
        }                                                                                                     \
    }                                                                                                         \
    static inline __attribute__((always_inline)) void requantize_rows_##acc_name##_##out_name(                \
        const array_argument *acc, const requantize_constants *r, const array_argument *out, const int with_bias) { \
        const Py_ssize_t *shape = acc->view.shape, *as = acc->view.strides, *os = out->view.strides;          \
        const Py_ssize_t c = shape[3], tile = r->tile;                                                        \
        const double *factor = r->factor, *constant = r->constant, *bias = r->bias;                           \
        const double low = r->low, high = r->high, limit = r->limit;                                          \
        const int adjacent = as[3] == (Py_ssize_t)sizeof(A) && os[3] == (Py_ssize_t)sizeof(O);                \
        const int runs = adjacent && as[2] == c * (Py_ssize_t)sizeof(A) && os[2] == c * (Py_ssize_t)sizeof(O); \
        for (Py_ssize_t b = 0; b < shape[0]; b++)                                                             \
            for (Py_ssize_t i = 0; i < shape[1]; i++) {                                                       \
                const char *from_row = (const char *)acc->view.buf + b * as[0] + i * as[1];                   \
                char *to_row = (char *)out->view.buf + b * os[0] + i * os[1];                                 \
                if (runs) { /* a row's pixels at once, `tile` values (whole pixels) a step */                  \
                    const Py_ssize_t count = shape[2] * c;                                                    \
                    for (Py_ssize_t start = 0; start < count; start += tile)                                  \
                        requantize_adjacent_##acc_name##_##out_name(                                          \
                            (const A *)from_row + start, factor, constant, bias, low, high, limit,            \
                            (O *)to_row + start, count - start < tile ? count - start : tile, with_bias);     \
                    continue;                                                                                 \
                }                                                                                             \
                for (Py_ssize_t j = 0; j < shape[2]; j++) {                                                   \
                    const char *from = from_row + j * as[2];                                                  \
                    char *to = to_row + j * os[2];                                                            \
                    if (adjacent) {                                                                           \
                        requantize_adjacent_##acc_name##_##out_name((const A *)from, factor, constant, bias, low, \
                                                                    high, limit, (O *)to, c, with_bias);      \
                        continue;                                                                             \
                    }                                                                                         \
                    for (Py_ssize_t k = 0; k < c; k++) {                                                      \
                        double result;                                                                        \
                        REQUANTIZE_ELEMENT(*(const A *)(from + k * as[3]), k);                                \
                        *(O *)(to + k * os[3]) = (O)result;                                                   \
                    }                                                                                         \
                }                                                                                             \
            }                                                                                                 \
    }                                                                                                         \
    LOOP_CLONES static void requantize_##acc_name##_##out_name(const array_argument *acc,                     \
                                                               const requantize_constants *r,                 \
                                                               const array_argument *out) {                   \
        if (r->bias != NULL)                                                                                  \
            requantize_rows_##acc_name##_##out_name(acc, r, out, 1);                                          \
        else                                                                                                  \
            requantize_rows_##acc_name##_##out_name(acc, r, out, 0);                                          \
    }
#define DEFINE_REQUANTIZE_TO_ALL(A, acc_name, _) INTEGER_TYPES(DEFINE_REQUANTIZE, A, acc_name)
NUMERIC_TYPES(DEFINE_REQUANTIZE_TO_ALL, )

typedef void (*requantize_kernel)(const array_argument *, const requantize_constants *, const array_argument *);
#define REQUANTIZE_ENTRY(O, out_name, acc_name) requantize_##acc_name##_##out_name,
#define REQUANTIZE_ROW(A, acc_name, _) {INTEGER_TYPES(REQUANTIZE_ENTRY, acc_name)},
static const requantize_kernel REQUANTIZE[10][8] = {NUMERIC_TYPES(REQUANTIZE_ROW, )};

static PyObject *requantize(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (require_arguments(nargs, 7, "requantize") < 0) return NULL;
    array_argument arrays[5];
    array_argument *acc = &arrays[0], *factor = &arrays[1], *constant = &arrays[2], *bias = &arrays[3],
                   *out = &arrays[4];
    for (int a = 0; a < 5; a++) arrays[a].held = 0;
    requantize_constants r;
    if (take_double(args[4], "low", &r.low) < 0 || take_double(args[5], "high", &r.high) < 0) return NULL;
    if (take_array(args[0], "acc", 4, 0, acc) < 0 || take_array(args[1], "factor", 1, 0, factor) < 0 ||
        take_array(args[2], "constant", 1, 0, constant) < 0 || take_array(args[3], "bias", 1, 0, bias) < 0 ||
        take_array(args[6], "out", 4, 1, out) < 0)
        goto fail;
    const Py_ssize_t channels = acc->view.shape[3];
    if (!is_integer_type(out->type)) {
        PyErr_Format(PyExc_TypeError, "out must be an integer array, not %s", ELEMENT_NAMES[out->type]);
        goto fail;
    }
    if (require_same_shape(acc, "acc", out, "out") < 0 || require_type(factor, "factor", FLOAT64) < 0 ||
        require_type(constant, "constant", FLOAT64) < 0 || require_type(bias, "bias", FLOAT64) < 0 ||
        require_vector(factor, "factor", channels) < 0 || require_vector(constant, "constant", channels) < 0 ||
        require_vector(bias, "bias", bias->view.shape[0] == 0 ? 0 : channels) < 0 ||
        bounds_fit(r.low, r.high, out->type, "out") < 0)
        goto fail;
    r.tile = tile_of(channels);
    double *tiled = malloc(3 * (size_t)r.tile * sizeof(double) + 1);
    if (tiled == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    const double *per_channel[] = {factor->view.buf, constant->view.buf, bias->view.buf};
    const int given = bias->view.shape[0] == 0 ? 2 : 3;
    for (int a = 0; a < given && channels > 0; a++) {
        memcpy(tiled + a * r.tile, per_channel[a], (size_t)channels * sizeof(double));
        repeat_row((char *)(tiled + a * r.tile), channels, r.tile, sizeof(double));
    }
    r.factor = tiled, r.constant = tiled + r.tile, r.bias = given == 3 ? tiled + 2 * r.tile : NULL;
    r.limit = 2147483647.0;
    Py_BEGIN_ALLOW_THREADS
    REQUANTIZE[acc->type][out->type](acc, &r, out);
    Py_END_ALLOW_THREADS
    free(tiled);
    return release_and_return(arrays, 5, args[6]);
fail:
    release_arrays(arrays, 5);
    return NULL;
}

/* ---- eltwise ----------------------------------------------------------------------------- */

typedef struct {
    int multiply;
    double a_factor, a_rounding, b_factor, b_rounding, sign, wide_limit, pre_scale, narrow_limit, factor, rounding,
        low, high;
} eltwise_constants;

/* The rule on float64 values (each integer below 2^46, exact): y from a and b. `e` a copy in
 * the caller's locals (read through a pointer, gcc must assume a store to y may change it). */
static inline __attribute__((always_inline)) double eltwise_rule(double a, double b, const eltwise_constants e,
                                                                 const int multiply, const int two_stage) {
    double wide;
    if (multiply) {
        wide = clamp(a * b, -e.narrow_limit, e.narrow_limit);
    } else {
        const double left = floor(a * e.a_factor + e.a_rounding);
        const double right = floor(b * e.b_factor + e.b_rounding);
        wide = clamp(left + e.sign * right, -e.wide_limit, e.wide_limit);
        if (two_stage) wide = clamp(floor(wide * e.pre_scale), -e.narrow_limit, e.narrow_limit);
    }
    return clamp(floor(wide * e.factor + e.rounding), e.low, e.high);
}

/* The rule along `count` values of a and b into y; the three variants of the rule decided once. */
#define ELTWISE_LOOP(e, count, Y, A, B)                                                                       \
    do {                                                                                                      \
        if ((e).multiply)                                                                                     \
            for (Py_ssize_t k = 0; k < (count); k++) Y = eltwise_rule(A, B, (e), 1, 0);                       \
        else if ((e).pre_scale > 0.0)                                                                         \
            for (Py_ssize_t k = 0; k < (count); k++) Y = eltwise_rule(A, B, (e), 0, 1);                       \
        else                                                                                                  \
            for (Py_ssize_t k = 0; k < (count); k++) Y = eltwise_rule(A, B, (e), 0, 0);                       \
    } while (0)

LOOP_CLONES static void eltwise_chunk(const eltwise_constants *constants, const double *restrict a,
                                      const double *restrict b, Py_ssize_t count, double *restrict y) {
    const eltwise_constants e = *constants;
    ELTWISE_LOOP(e, count, y[k], a[k], b[k]);
}

#define ELTWISE_CHUNK 512  /* values at once: three float64 buffers in the L1 cache */

/* int8 a, b and out, each adjacent (the simulator's ELTWISE): the rule straight from the bytes, into
 * int32 (every result is in [low, high]: exact) and then packed to int8 in a loop of its own; gcc's
 * conversion of float64 straight to int8 takes 1.3x as long. */
LOOP_CLONES static void eltwise_int8(const eltwise_constants *constants, const int8_t *restrict a,
                                     const int8_t *restrict b, Py_ssize_t count, int8_t *restrict out) {
    const eltwise_constants e = *constants;
    int32_t result[ELTWISE_CHUNK];
    for (Py_ssize_t start = 0; start < count; start += ELTWISE_CHUNK) {
        const Py_ssize_t chunk = count - start < ELTWISE_CHUNK ? count - start : ELTWISE_CHUNK;
        const int8_t *restrict left = a + start, *restrict right = b + start;
        if (e.multiply) /* the product of two int8 is exact in int32 as in float64: formed there, times 1 */
            for (Py_ssize_t k = 0; k < chunk; k++)
                result[k] = (int32_t)eltwise_rule((double)(left[k] * right[k]), 1.0, e, 1, 0);
        else
            ELTWISE_LOOP(e, chunk, result[k], (double)left[k], (double)right[k]);
        for (Py_ssize_t k = 0; k < chunk; k++) out[start + k] = (int8_t)result[k];
    }
}

/* An array's elements as float64 (np.float64 of each), and float64 integers into an integer array. */
#define DEFINE_LOAD(T, name, _)                                                                               \
    LOOP_CLONES static void load_##name(const char *from, Py_ssize_t stride, Py_ssize_t count, double *to) {  \
        if (stride == (Py_ssize_t)sizeof(T))                                                                  \
            for (Py_ssize_t k = 0; k < count; k++) to[k] = (double)((const T *)from)[k];                      \
        else                                                                                                  \
            for (Py_ssize_t k = 0; k < count; k++) to[k] = (double)*(const T *)(from + k * stride);           \
    }
#define DEFINE_STORE(T, name, _)                                                                              \
    LOOP_CLONES static void store_##name(const double *from, Py_ssize_t count, char *to, Py_ssize_t stride) { \
        if (stride == (Py_ssize_t)sizeof(T))                                                                  \
            for (Py_ssize_t k = 0; k < count; k++) ((T *)to)[k] = (T)from[k];                                 \
        else                                                                                                  \
            for (Py_ssize_t k = 0; k < count; k++) *(T *)(to + k * stride) = (T)from[k];                      \
    }
NUMERIC_TYPES(DEFINE_LOAD, )
INTEGER_TYPES(DEFINE_STORE, )
typedef void (*load_kernel)(const char *, Py_ssize_t, Py_ssize_t, double *);
typedef void (*store_kernel)(const double *, Py_ssize_t, char *, Py_ssize_t);
#define LOAD_ENTRY(T, name, _) load_##name,
#define STORE_ENTRY(T, name, _) store_##name,
static const load_kernel LOAD[] = {NUMERIC_TYPES(LOAD_ENTRY, )};
static const store_kernel STORE[] = {INTEGER_TYPES(STORE_ENTRY, )};

static PyObject *eltwise(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (require_arguments(nargs, 16, "eltwise") < 0) return NULL;
    eltwise_constants e;
    double *const constants[] = {&e.a_factor, &e.a_rounding, &e.b_factor, &e.b_rounding, &e.sign, &e.wide_limit,
                                 &e.pre_scale, &e.narrow_limit, &e.factor, &e.rounding, &e.low, &e.high};
    static const char *const names[] = {"a_factor", "a_rounding", "b_factor", "b_rounding", "sign", "wide_limit",
                                        "pre_scale", "narrow_limit", "factor", "rounding", "low", "high"};
    if (take_flag(args[2], "multiply", &e.multiply) < 0) return NULL;
    for (int p = 0; p < 12; p++)
        if (take_double(args[3 + p], names[p], constants[p]) < 0) return NULL;
    array_argument arrays[3];
    array_argument *a = &arrays[0], *b = &arrays[1], *out = &arrays[2];
    a->held = b->held = out->held = 0;
    if (take_array(args[0], "a", 1, 0, a) < 0 || take_array(args[1], "b", 1, 0, b) < 0 ||
        take_array(args[15], "out", 1, 1, out) < 0 || require_same_shape(a, "a", b, "b") < 0 ||
        require_same_shape(a, "a", out, "out") < 0)
        goto fail;
    if (!is_integer_type(out->type)) {
        PyErr_Format(PyExc_TypeError, "out must be an integer array, not %s", ELEMENT_NAMES[out->type]);
        goto fail;
    }
    if (bounds_fit(e.low, e.high, out->type, "out") < 0) goto fail;
    const Py_ssize_t size = a->view.shape[0];
    const Py_ssize_t sa = a->view.strides[0], sb = b->view.strides[0], so = out->view.strides[0];
    const load_kernel load_a = LOAD[a->type], load_b = LOAD[b->type];
    const store_kernel store = STORE[out->type];
    if (a->type == INT8 && b->type == INT8 && out->type == INT8 && sa == 1 && sb == 1 && so == 1) {
        Py_BEGIN_ALLOW_THREADS
        eltwise_int8(&e, a->view.buf, b->view.buf, size, out->view.buf);
        Py_END_ALLOW_THREADS
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    double left[ELTWISE_CHUNK], right[ELTWISE_CHUNK], result[ELTWISE_CHUNK];
    for (Py_ssize_t start = 0; start < size; start += ELTWISE_CHUNK) {
        const Py_ssize_t count = size - start < ELTWISE_CHUNK ? size - start : ELTWISE_CHUNK;
        load_a((const char *)a->view.buf + start * sa, sa, count, left);
        load_b((const char *)b->view.buf + start * sb, sb, count, right);
        eltwise_chunk(&e, left, right, count, result);
        store(result, count, (char *)out->view.buf + start * so, so);
    }
    Py_END_ALLOW_THREADS
done:
    return release_and_return(arrays, 3, args[15]);
fail:
    release_arrays(arrays, 3);
    return NULL;
}

/* ---- quantize ---------------------------------------------------------------------------- */

/* R4 on one value: x / scale in float64, NaN to 0, saturated to +-limit, rounded half away
 * from zero as floor(|v| + 0.5) with v's sign (fixed_point._quantize_block's steps). */
static inline double quantize_rule(double x, double scale, double limit) {
    const double v = x / scale;
    const double saturated = clamp(v, -limit, limit);
    const double rounded = copysign(floor(fabs(saturated) + 0.5), saturated);
    return v == v ? rounded : 0.0; /* a select, not a branch: the loop below vectorizes */
}

#define QUANTIZE_CHUNK 512 /* values at once: a float64 buffer in the L1 cache */

LOOP_CLONES static void quantize_chunk(double *restrict values, Py_ssize_t count, double scale, double limit) {
    for (Py_ssize_t k = 0; k < count; k++) values[k] = quantize_rule(values[k], scale, limit);
}

static PyObject *quantize(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (require_arguments(nargs, 4, "quantize") < 0) return NULL;
    double scale, limit;
    if (take_double(args[1], "scale", &scale) < 0 || take_double(args[2], "limit", &limit) < 0) return NULL;
    array_argument arrays[2];
    array_argument *x = &arrays[0], *out = &arrays[1];
    x->held = out->held = 0;
    if (take_array(args[0], "x", 1, 0, x) < 0 || take_array(args[3], "out", 1, 1, out) < 0 ||
        require_same_shape(x, "x", out, "out") < 0)
        goto fail;
    if (!is_integer_type(out->type)) {
        PyErr_Format(PyExc_TypeError, "out must be an integer array, not %s", ELEMENT_NAMES[out->type]);
        goto fail;
    }
    if (!(scale > 0.0 && isfinite(scale)) || !(limit >= 0.0) || bounds_fit(-limit, limit, out->type, "out") < 0) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "quantize needs a positive finite scale and limit >= 0, got %g and %g",
                         scale, limit);
        goto fail;
    }
    const Py_ssize_t size = x->view.shape[0], sx = x->view.strides[0], so = out->view.strides[0];
    const load_kernel load = LOAD[x->type];
    const store_kernel store = STORE[out->type];
    Py_BEGIN_ALLOW_THREADS
    double values[QUANTIZE_CHUNK];
    for (Py_ssize_t start = 0; start < size; start += QUANTIZE_CHUNK) {
        const Py_ssize_t count = size - start < QUANTIZE_CHUNK ? size - start : QUANTIZE_CHUNK;
        load((const char *)x->view.buf + start * sx, sx, count, values);
        quantize_chunk(values, count, scale, limit);
        store(values, count, (char *)out->view.buf + start * so, so);
    }
    Py_END_ALLOW_THREADS
    return release_and_return(arrays, 2, args[3]);
fail:
    release_arrays(arrays, 2);
    return NULL;
}

/* ---- the module -------------------------------------------------------------------------- */

static PyMethodDef METHODS[] = {
    {"depthwise_sums", (PyCFunction)(void (*)(void))depthwise_sums, METH_FASTCALL,
     "depthwise_sums(x, weight, sh, sw, dh, dw, pad_top, pad_left, sums) -> sums\n\n"
     "R13 for a depthwise convolution: sums[n, i, j, c] = sum over the taps (u, v) inside the input of\n"
     "x[n, i*sh + u*dh - pad_top, j*sw + v*dw - pad_left, c] * weight[u, v, c].\n\n"
     "Taps in the zero padding add nothing and are skipped. x (N x H x W x C, any strides) and weight\n"
     "(KH x KW x C) are integer arrays of any type; `sums` (N x OH x OW x C) is int32 or int64, wide\n"
     "enough for every sum (the caller chooses from the operands' bound); products are formed in that width."},
    {"table_lookup", (PyCFunction)(void (*)(void))table_lookup, METH_FASTCALL,
     "table_lookup(q, table, out) -> out\n\n"
     "R15 for int8 codes through an `int8_lookup_table` (256 int8 entries): out[...] = table[byte of q],\n"
     "q and `out` int8 N x H x W x C (any strides; `out` may be `q`, each element read before it is\n"
     "written). numpy's take first widens the int8 indices to intp: ~8 ns an element against ~1 here."},
    {"requantize", (PyCFunction)(void (*)(void))requantize, METH_FASTCALL,
     "requantize(acc, factor, constant, bias, low, high, out) -> out\n\n"
     "R13's bias, R9's rescale and R8's clamp of integer-valued sums, channels last:\n"
     "out[..., k] = clip(floor(a * factor[k] + constant[k]), low, high), where a = acc[..., k],\n"
     "or, when `bias` is not empty, a = clip(acc[..., k] + bias[k], -(2^31 - 1), 2^31 - 1)\n"
     "(the int32 saturation of R13). Every step is exact in float64 (fixed_point.rescale_float\n"
     "gives the argument), so this is R6 on integers. `acc` (any numeric type) and `out` (an integer\n"
     "type that holds [low, high]) are N x H x W x C, any strides; `factor`, `constant` (and `bias`)\n"
     "are contiguous float64 with C entries."},
    {"eltwise", (PyCFunction)(void (*)(void))eltwise, METH_FASTCALL,
     "eltwise(a, b, multiply, a_factor, a_rounding, b_factor, b_rounding, sign, wide_limit, pre_scale,\n"
     "        narrow_limit, factor, rounding, low, high, out) -> out\n\n"
     "ELTWISE on two flat arrays of one size (any numeric types). With `multiply`: R12, a * b saturated\n"
     "to +-narrow_limit (int16). Otherwise add/sub: R6 of each input (floor(x * M * 2^-shift +\n"
     "rounding), exact for |x| <= 2^31), their sum or difference (`sign` -1) saturated to\n"
     "+-wide_limit (R10, int24), with `pre_scale` > 0 the truncating R7 shift\n"
     "floor(w * pre_scale) saturated to +-narrow_limit (seed 000's int16 stage). Then R9 to\n"
     "[low, high] into the integer array `out`. Every value is an integer below 2^46 held exactly\n"
     "in float64, as in fixed_point.rescale_float."},
    {"quantize", (PyCFunction)(void (*)(void))quantize, METH_FASTCALL,
     "quantize(x, scale, limit, out) -> out\n\n"
     "R4 element by element: out[k] = saturate(round_half_away(x[k] / scale), limit), the division\n"
     "in float64, NaN to 0, +-inf saturated, rounded as floor(|v| + 0.5) with v's sign. `x` (any\n"
     "numeric type) and `out` (an integer type that holds [-limit, limit]) are flat, any strides;\n"
     "`scale` positive and finite."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {
    PyModuleDef_HEAD_INIT, "xnpu.semantics.fixed_point_loops",
    "The loops of the integer semantics that numpy cannot run at memory speed, compiled when xnpu\n"
    "is installed (semantics/fixed_point_loops.c). Each is the rule its fixed_point caller cites,\n"
    "the one implementation of that arithmetic; every float operation IEEE, in the order written.",
    0, METHODS, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit_fixed_point_loops(void) { return PyModule_Create(&MODULE); }
