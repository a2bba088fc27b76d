/* This machine's own request/answer limit over loopback: a blocking ping-pong of fixed-size messages between two
 * processes (emulator/pingpong.py starts them).  ping() writes a request of `out_size` bytes, reads an answer of
 * `in_size` bytes, and times the exchange with CLOCK_MONOTONIC, `count` times; echo() reads requests of `in_size`
 * bytes and answers each with `out_size` bytes until the peer closes.  Both loops run without the GIL and block
 * in read(): no polling, no event loop, nothing between the socket and the clock but the two system calls. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_SIZE 65536
#define MAX_COUNT 10000000

/* Move n bytes through fd, reading or writing: 0 when done; 1: the peer closed first (a read of 0); -1: an error
 * (errno). */
static int transfer(int fd, char *buf, size_t n, int reading)
{
    while (n > 0) {
        ssize_t k = reading ? read(fd, buf, n) : write(fd, buf, n);
        if (k == 0 && reading)
            return 1;
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        buf += k;
        n -= (size_t)k;
    }
    return 0;
}

static int sizes_ok(Py_ssize_t a, Py_ssize_t b)
{
    if (a < 1 || a > MAX_SIZE || b < 1 || b > MAX_SIZE) {
        PyErr_Format(PyExc_ValueError, "message sizes must be 1..%d bytes (got %zd and %zd)", MAX_SIZE, a, b);
        return 0;
    }
    return 1;
}

static PyObject *ping(PyObject *Py_UNUSED(self), PyObject *args)
{
    int fd;
    Py_ssize_t out_size, in_size, count;
    if (!PyArg_ParseTuple(args, "innn", &fd, &out_size, &in_size, &count))
        return NULL;
    if (!sizes_ok(out_size, in_size))
        return NULL;
    if (count < 1 || count > MAX_COUNT) {
        PyErr_Format(PyExc_ValueError, "count must be 1..%d (got %zd)", MAX_COUNT, count);
        return NULL;
    }
    char *buf = PyMem_Malloc((size_t)(out_size > in_size ? out_size : in_size));
    if (buf == NULL)
        return PyErr_NoMemory();
    PyObject *out = PyBytes_FromStringAndSize(NULL, count * (Py_ssize_t)sizeof(int64_t));
    if (out == NULL) {
        PyMem_Free(buf);
        return NULL;
    }
    int64_t *rtt = (int64_t *)PyBytes_AS_STRING(out);
    memset(buf, 0x5a, (size_t)(out_size > in_size ? out_size : in_size));
    int status = 0, saved = 0;
    Py_ssize_t done = 0;
    Py_BEGIN_ALLOW_THREADS
    for (; done < count; done++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        if (transfer(fd, buf, (size_t)out_size, 0) != 0) {
            status = -1;
            break;
        }
        status = transfer(fd, buf, (size_t)in_size, 1);
        if (status != 0)
            break;
        clock_gettime(CLOCK_MONOTONIC, &b);
        rtt[done] = (int64_t)(b.tv_sec - a.tv_sec) * 1000000000 + (b.tv_nsec - a.tv_nsec);
    }
    saved = errno;
    Py_END_ALLOW_THREADS
    PyMem_Free(buf);
    if (status != 0) {
        Py_DECREF(out);
        if (status > 0)
            return PyErr_Format(PyExc_ConnectionError, "the echo side closed after %zd of %zd exchanges", done,
                                count);
        errno = saved;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    return out;
}

static PyObject *echo(PyObject *Py_UNUSED(self), PyObject *args)
{
    int fd;
    Py_ssize_t in_size, out_size;
    if (!PyArg_ParseTuple(args, "inn", &fd, &in_size, &out_size))
        return NULL;
    if (!sizes_ok(in_size, out_size))
        return NULL;
    char *buf = PyMem_Malloc((size_t)(out_size > in_size ? out_size : in_size));
    if (buf == NULL)
        return PyErr_NoMemory();
    memset(buf, 0xa5, (size_t)(out_size > in_size ? out_size : in_size));
    long long answered = 0;
    int status = 0, saved = 0;
    Py_BEGIN_ALLOW_THREADS
    for (;;) {
        status = transfer(fd, buf, (size_t)in_size, 1);
        if (status != 0)
            break;
        if (transfer(fd, buf, (size_t)out_size, 0) != 0) {
            status = -1;
            break;
        }
        answered++;
    }
    saved = errno;
    Py_END_ALLOW_THREADS
    PyMem_Free(buf);
    if (status < 0) {
        errno = saved;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    return PyLong_FromLongLong(answered);
}

static PyMethodDef methods[] = {
    {"ping", ping, METH_VARARGS,
     "ping(fd, out_size, in_size, count) -> bytes: count int64 round trips (ns), native byte order"},
    {"echo", echo, METH_VARARGS, "echo(fd, in_size, out_size) -> int: answers until the peer closed"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_pingpong", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__pingpong(void)
{
    return PyModule_Create(&module);
}
