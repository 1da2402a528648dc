/* xnpu.transforms.calibrate_loops: the histogram loops of calibrate.py, compiled when xnpu is
 * installed (pyproject.toml's ext-modules).
 *
 * `uniform_histogram` counts exactly what np.histogram(values, bins, range=(first, last))
 * counts, in one pass over the data instead of about ten. It follows NumPy's uniform-bin path
 * in the same float types: an index estimated from (v - first) * bins / (last - first), then
 * corrected by one against the float edges, so that bin i holds edges[i] <= v < edges[i + 1].
 * Any estimate within one bin gives the same corrected index, so multiplying by bins / (last -
 * first) instead of NumPy's division changes nothing; test_calibrate checks the counts against
 * np.histogram on values at, just above and just below every edge. Built with
 * -ffp-contract=off and without -ffast-math: every float operation IEEE, in the order written.
 * The arguments are checked at the boundary (core/loop_arguments.h); the loops release the
 * GIL (calibrate_statistics splits a histogram over the cores with threads). */

#include "loop_arguments.h"

#include <math.h>

/* The bins of one histogram, in the values' float type T. */
#define DEFINE_HISTOGRAMS(T, name, ABS)                                                                       \
    typedef struct {                                                                                          \
        T first, last, clip_low, clip_high;                                                                   \
        double bins_per_unit;                                                                                 \
        const T *edges; /* bins + 1 */                                                                        \
        Py_ssize_t bins;                                                                                      \
    } bins_##name;                                                                                            \
                                                                                                              \
    /* The bin of one value, clipped to [clip_low, clip_high] (as np.clip of a finite value;                  \
     * infinite bounds leave it) and taken as |v| with `magnitudes`, and whether it lies in [first,           \
     * last] (an index in [0, bins) either way, so that a count can add the flag). Without branches           \
     * on the data: calibration's values fall on both sides of a clip bound or an edge at random, and         \
     * a mispredicted branch cost more than the arithmetic. */                                                \
    static inline __attribute__((always_inline)) Py_ssize_t bin_of_##name(T v, const bins_##name *r,          \
                                                                          const int magnitudes, int *inside) { \
        v = v < r->clip_low ? r->clip_low : v; /* comparisons, as np.clip: a nan stays nan (not inside) */    \
        v = v > r->clip_high ? r->clip_high : v;                                                              \
        if (magnitudes) v = ABS(v);                                                                           \
        *inside = (v >= r->first) & (v <= r->last);                                                           \
        const Py_ssize_t last_bin = r->bins - 1;                                                              \
        double estimate = (double)(T)(v - r->first) * r->bins_per_unit;                                       \
        estimate = estimate > 0.0 ? estimate : 0.0; /* comparisons also take a nan to a bound */              \
        estimate = estimate < (double)last_bin ? estimate : (double)last_bin;                                 \
        Py_ssize_t index = (Py_ssize_t)estimate;                                                              \
        const int down = v < r->edges[index];                                                                 \
        const int up = (!down) & (index != last_bin) & (v >= r->edges[index + 1]);                            \
        index = index - down + up;                                                                            \
        index = index > 0 ? index : 0;                                                                        \
        return index < last_bin ? index : last_bin;                                                           \
    }                                                                                                         \
                                                                                                              \
    static inline __attribute__((always_inline)) void count_##name(const char *values, Py_ssize_t size,       \
                                                                   Py_ssize_t stride, const bins_##name *r,   \
                                                                   int64_t *counts, const int magnitudes) {   \
        for (Py_ssize_t k = 0; k < size; k++) {                                                               \
            int inside;                                                                                       \
            const Py_ssize_t index = bin_of_##name(*(const T *)(values + k * stride), r, magnitudes, &inside); \
            counts[index] += inside;                                                                          \
        }                                                                                                     \
    }                                                                                                         \
                                                                                                              \
    /* counts[bin] += 1 for each of the `size` values (`stride` bytes apart) inside the range. */             \
    static inline __attribute__((always_inline)) void histogram_##name(const char *values, Py_ssize_t size, Py_ssize_t stride, const bins_##name *r,  \
                                 int magnitudes, int64_t *counts) {                                           \
        if (magnitudes) /* the same for every value: decided once */                                         \
            count_##name(values, size, stride, r, counts, 1);                                                 \
        else                                                                                                  \
            count_##name(values, size, stride, r, counts, 0);                                                 \
    }
DEFINE_HISTOGRAMS(float, float32, fabsf)
DEFINE_HISTOGRAMS(double, float64, fabs)

typedef struct {
    array_argument arrays[3]; /* values, edges, counts */
    double first, last, bins_per_unit, clip_low, clip_high;
    int magnitudes;
} histogram_arguments;

/* The arguments both loops share: (values, first, last, bins_per_unit, edges, magnitudes,
 * clip_low, clip_high, counts), the values float32 or float64 with `ndim` axes, the edges
 * (np.linspace(first, last, B + 1)) in their type, counts int64 with `count_axes` axes, C
 * contiguous, its last axis the B bins. 0, or -1 with an error set. */
static int take_histogram_arguments(PyObject *const *args, Py_ssize_t nargs, const char *function, int ndim,
                                    int count_axes, histogram_arguments *h) {
    array_argument *values = &h->arrays[0], *edges = &h->arrays[1], *counts = &h->arrays[2];
    values->held = edges->held = counts->held = 0;
    if (require_arguments(nargs, 9, function) < 0 || take_double(args[1], "first", &h->first) < 0 ||
        take_double(args[2], "last", &h->last) < 0 || take_double(args[3], "bins_per_unit", &h->bins_per_unit) < 0 ||
        take_flag(args[5], "magnitudes", &h->magnitudes) < 0 || take_double(args[6], "clip_low", &h->clip_low) < 0 ||
        take_double(args[7], "clip_high", &h->clip_high) < 0 || take_array(args[0], "values", ndim, 0, values) < 0 ||
        take_array(args[4], "edges", 1, 0, edges) < 0 || take_array(args[8], "counts", count_axes, 1, counts) < 0 ||
        require_type(counts, "counts", INT64) < 0)
        return -1;
    if (!is_float_type(values->type)) {
        PyErr_Format(PyExc_TypeError, "values must be float32 or float64, not %s", ELEMENT_NAMES[values->type]);
        return -1;
    }
    if (require_type(edges, "edges (in the values' type)", values->type) < 0) return -1;
    const Py_ssize_t bins = counts->view.shape[count_axes - 1];
    if (bins < 1 || !PyBuffer_IsContiguous(&counts->view, 'C')) {
        PyErr_SetString(PyExc_ValueError, "counts must be C contiguous with at least one bin");
        return -1;
    }
    return require_vector(edges, "edges", bins + 1);
}

#define BINS(T, h)                                                                                            \
    {(T)(h).first, (T)(h).last, (T)(h).clip_low, (T)(h).clip_high, (h).bins_per_unit,                         \
     (const T *)(h).arrays[1].view.buf, (h).arrays[2].view.shape[(h).arrays[2].view.ndim - 1]}

LOOP_CLONES static void uniform_loop(histogram_arguments *h) {
    const Py_buffer *values = &h->arrays[0].view;
    int64_t *counts = h->arrays[2].view.buf;
    if (h->arrays[0].type == FLOAT32) {
        const bins_float32 r = BINS(float, *h);
        histogram_float32(values->buf, values->shape[0], values->strides[0], &r, h->magnitudes, counts);
    } else {
        const bins_float64 r = BINS(double, *h);
        histogram_float64(values->buf, values->shape[0], values->strides[0], &r, h->magnitudes, counts);
    }
}

static PyObject *uniform_histogram(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    histogram_arguments h;
    if (take_histogram_arguments(args, nargs, "uniform_histogram", 1, 1, &h) < 0) {
        release_arrays(h.arrays, 3);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    uniform_loop(&h);
    Py_END_ALLOW_THREADS
    return release_and_return(h.arrays, 3, args[8]);
}

LOOP_CLONES static void channel_loop(histogram_arguments *h) {
    const Py_buffer *values = &h->arrays[0].view;
    const Py_ssize_t *shape = values->shape, *strides = values->strides;
    const Py_ssize_t bins = h->arrays[2].view.shape[1];
    int64_t *counts = h->arrays[2].view.buf;
    for (Py_ssize_t n = 0; n < shape[0]; n++)
        for (Py_ssize_t c = 0; c < shape[1]; c++) {
            const char *row = (const char *)values->buf + n * strides[0] + c * strides[1];
            if (h->arrays[0].type == FLOAT32) {
                const bins_float32 r = BINS(float, *h);
                histogram_float32(row, shape[2], strides[2], &r, h->magnitudes, counts + c * bins);
            } else {
                const bins_float64 r = BINS(double, *h);
                histogram_float64(row, shape[2], strides[2], &r, h->magnitudes, counts + c * bins);
            }
        }
}

static PyObject *channel_histograms(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    histogram_arguments h;
    if (take_histogram_arguments(args, nargs, "channel_histograms", 3, 2, &h) < 0) goto fail;
    if (h.arrays[2].view.shape[0] != h.arrays[0].view.shape[1]) {
        PyErr_SetString(PyExc_ValueError, "counts must have a row per channel (the values' axis 1)");
        goto fail;
    }
    Py_BEGIN_ALLOW_THREADS
    channel_loop(&h);
    Py_END_ALLOW_THREADS
    return release_and_return(h.arrays, 3, args[8]);
fail:
    release_arrays(h.arrays, 3);
    return NULL;
}

static PyMethodDef METHODS[] = {
    {"uniform_histogram", (PyCFunction)(void (*)(void))uniform_histogram, METH_FASTCALL,
     "uniform_histogram(values, first, last, bins_per_unit, edges, magnitudes, clip_low, clip_high, counts)\n"
     "-> counts\n\n"
     "Add to `counts` (B bins, int64) the bins of the samples of the flat float32 or float64 array\n"
     "`values` (any stride) that lie in [first, last]: bin i holds edges[i] <= v < edges[i + 1], the\n"
     "last bin also v == last; each value first clipped to [clip_low, clip_high] and, with `magnitudes`,\n"
     "taken as |v|. `first`, `last`, the clip bounds and `edges` (np.linspace(first, last, B + 1)) are in\n"
     "the values' float type; `bins_per_unit` is B / (last - first) in float64."},
    {"channel_histograms", (PyCFunction)(void (*)(void))channel_histograms, METH_FASTCALL,
     "channel_histograms(values, first, last, bins_per_unit, edges, magnitudes, clip_low, clip_high, counts)\n"
     "-> counts\n\n"
     "uniform_histogram of each channel of the 3-D array `values` (N x C x positions, any strides) into\n"
     "its row of `counts` (C x B): the same bins and clipping, counted per channel."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {
    PyModuleDef_HEAD_INIT, "xnpu.transforms.calibrate_loops",
    "The histogram loops of calibrate.py, compiled when xnpu is installed\n"
    "(transforms/calibrate_loops.c): np.histogram's counts in one pass over the data.",
    0, METHODS, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit_calibrate_loops(void) { return PyModule_Create(&MODULE); }
