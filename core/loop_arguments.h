/* The boundary of xnpu's compiled loops (semantics/fixed_point_loops.c,
 * transforms/calibrate_loops.c): their array arguments through the buffer protocol (numpy
 * arrays and views of any strides), checked here, so that a loop only ever indexes inside the
 * shapes it was given; and their scalar arguments. A wrong argument raises TypeError (what it
 * is) or ValueError (its shape, size or range), never reaches a loop.
 *
 * Built into each extension module (included, not linked): a header of static functions. */

#ifndef XNPU_LOOP_ARGUMENTS_H
#define XNPU_LOOP_ARGUMENTS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* The loops are compiled twice, for AVX2 and for the baseline x86-64, and the first call
 * chooses by the CPU (gcc's function multiversioning): numba compiled for the host's CPU.
 * Elsewhere, or with another compiler, once for the baseline. */
#ifndef LOOP_CLONES /* -DLOOP_CLONES= builds the baseline only (test/python/test_compiled_loops.py's check of it) */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define LOOP_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define LOOP_CLONES
#endif
#endif

typedef enum { INT8, UINT8, INT16, UINT16, INT32, UINT32, INT64, UINT64, FLOAT32, FLOAT64, UNSUPPORTED } element_type;

static const char *const ELEMENT_NAMES[] = {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
                                            "float32", "float64", "unsupported"};

typedef struct {
    Py_buffer view;
    element_type type;
    int held;
} array_argument;

static inline int is_integer_type(element_type type) { return type <= UINT64; }

static inline int is_float_type(element_type type) { return type == FLOAT32 || type == FLOAT64; }

/* The element type of a buffer: a single struct-module code in native byte order (numpy's
 * formats), its size from the buffer's itemsize. */
static inline element_type element_type_of(const Py_buffer *view) {
    const char *format = view->format == NULL ? "B" : view->format;
    if (*format == '@' || *format == '=') {
        format++;
    } else if (*format == '<' || *format == '>' || *format == '!') {
        const int little = *format == '<';
        const uint16_t probe = 1;
        if (little != (*(const uint8_t *)&probe == 1)) return UNSUPPORTED;
        format++;
    }
    if (format[0] == '\0' || format[1] != '\0') return UNSUPPORTED;
    int is_signed;
    switch (format[0]) {
        case 'b': case 'h': case 'i': case 'l': case 'q': is_signed = 1; break;
        case 'B': case 'H': case 'I': case 'L': case 'Q': is_signed = 0; break;
        case 'f': return view->itemsize == 4 ? FLOAT32 : UNSUPPORTED;
        case 'd': return view->itemsize == 8 ? FLOAT64 : UNSUPPORTED;
        default: return UNSUPPORTED;
    }
    switch (view->itemsize) {
        case 1: return is_signed ? INT8 : UINT8;
        case 2: return is_signed ? INT16 : UINT16;
        case 4: return is_signed ? INT32 : UINT32;
        case 8: return is_signed ? INT64 : UINT64;
        default: return UNSUPPORTED;
    }
}

/* Take `object` as an array of `ndim` axes (writable if asked), any strides. 0, or -1 with
 * TypeError/ValueError set. Every array_argument is released by release_arrays. */
static inline int take_array(PyObject *object, const char *name, int ndim, int writable, array_argument *array) {
    array->held = 0;
    if (!PyObject_CheckBuffer(object)) {
        PyErr_Format(PyExc_TypeError, "%s must be an array, not %.80s", name, Py_TYPE(object)->tp_name);
        return -1;
    }
    if (PyObject_GetBuffer(object, &array->view, writable ? PyBUF_RECORDS : PyBUF_RECORDS_RO) < 0) {
        PyErr_Clear();
        PyErr_Format(writable ? PyExc_ValueError : PyExc_TypeError, "%s must be a %sarray with strides", name,
                     writable ? "writable " : "");
        return -1;
    }
    array->held = 1;
    array->type = element_type_of(&array->view);
    if (array->type == UNSUPPORTED) {
        PyErr_Format(PyExc_TypeError, "%s has an unsupported element type (format '%s')", name,
                     array->view.format == NULL ? "B" : array->view.format);
        return -1;
    }
    if (array->view.ndim != ndim || array->view.strides == NULL || array->view.suboffsets != NULL) {
        PyErr_Format(PyExc_ValueError, "%s must have %d axes, not %d", name, ndim, array->view.ndim);
        return -1;
    }
    return 0;
}

static inline void release_arrays(array_argument *arrays, int count) {
    for (int i = 0; i < count; i++) {
        if (arrays[i].held) PyBuffer_Release(&arrays[i].view);
        arrays[i].held = 0;
    }
}

/* How every wrapper ends once its loop has run: the arrays released and the output argument
 * returned, a new reference (each function's `-> out`). */
static inline PyObject *release_and_return(array_argument *arrays, int count, PyObject *out) {
    release_arrays(arrays, count);
    Py_INCREF(out);
    return out;
}

static inline int require_type(const array_argument *array, const char *name, element_type type) {
    if (array->type == type) return 0;
    PyErr_Format(PyExc_TypeError, "%s must be %s, not %s", name, ELEMENT_NAMES[type], ELEMENT_NAMES[array->type]);
    return -1;
}

/* A one-axis array of `size` elements, adjacent in memory (the loops index it as a C array). */
static inline int require_vector(const array_argument *array, const char *name, Py_ssize_t size) {
    if (array->view.shape[0] != size) {
        PyErr_Format(PyExc_ValueError, "%s must have %zd entries, not %zd", name, size, array->view.shape[0]);
        return -1;
    }
    if (size > 1 && array->view.strides[0] != array->view.itemsize) {
        PyErr_Format(PyExc_ValueError, "%s must be contiguous", name);
        return -1;
    }
    return 0;
}

static inline int require_same_shape(const array_argument *a, const char *a_name, const array_argument *b,
                              const char *b_name) {
    for (int axis = 0; axis < a->view.ndim; axis++) {
        if (a->view.shape[axis] != b->view.shape[axis]) {
            PyErr_Format(PyExc_ValueError, "%s and %s must have the same shape", a_name, b_name);
            return -1;
        }
    }
    return 0;
}

static inline int require_arguments(Py_ssize_t given, Py_ssize_t expected, const char *function) {
    if (given == expected) return 0;
    PyErr_Format(PyExc_TypeError, "%s takes %zd arguments (%zd given)", function, expected, given);
    return -1;
}

/* A float argument (a Python or numpy number), or -1 with TypeError set. */
static inline int take_double(PyObject *object, const char *name, double *value) {
    *value = PyFloat_AsDouble(object);
    if (*value == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s must be a number, not %.80s", name, Py_TYPE(object)->tp_name);
        return -1;
    }
    return 0;
}

/* An integer argument in [low, high], or -1 with TypeError/ValueError set. */
static inline int take_integer(PyObject *object, const char *name, long long low, long long high, long long *value) {
    PyObject *index = PyNumber_Index(object);
    if (index == NULL) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s must be an integer, not %.80s", name, Py_TYPE(object)->tp_name);
        return -1;
    }
    int overflow;
    *value = PyLong_AsLongLongAndOverflow(index, &overflow);
    Py_DECREF(index);
    if (overflow || *value < low || *value > high) {
        PyErr_Format(PyExc_ValueError, "%s must be in [%lld, %lld]", name, low, high);
        return -1;
    }
    return 0;
}

static inline int take_flag(PyObject *object, const char *name, int *value) {
    *value = PyObject_IsTrue(object);
    if (*value < 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s must be a truth value", name);
        return -1;
    }
    return 0;
}

/* The element of `array` at a byte offset from its start. */
#define ELEMENT(T, array, offset) (*(T *)((char *)(array).view.buf + (offset)))

#endif
