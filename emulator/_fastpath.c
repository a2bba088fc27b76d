/* The emulator's PACKET_IN path over whole receive buffers (emulator/fastpath.py loads it; it is optional).
 *
 * match():       a TrafficSwitch's answers, PACKET_OUT and buffered FLOW_MOD, matched to its requests and booked,
 *                message after message, until one it leaves to Python (another type, an unbuffered FLOW_MOD, a
 *                short or malformed one, or an incomplete one at the end of the buffer).
 * packet_outs(): the null controller's answers, one PACKET_OUT per buffered PACKET_IN, built in one buffer.
 * fill():        a PacketInBlock's messages for requests seq .. seq+count-1 copied out with their sequence numbers.
 * respond():     the null controller's compiled responder: packet_outs() on one blocking socket, without the GIL,
 *                until the peer closes or a message is Python's (emulator/nullctl.py, --responder compiled).
 *
 * Each does exactly what the pure-Python code beside it does (emulator/traffic.py, emulator/nullctl.py,
 * emulator/frames.py); tests/test_fastpath.py runs the same unit tests over both.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#define OFP10 1
#define ECHO_REQUEST 2
#define ECHO_REPLY 3
#define PACKET_IN 10
#define PACKET_OUT 13                                           /* the same type numbers in 1.0 and 1.3 */
#define FLOW_MOD 14
#define NO_BUFFER 0xFFFFFFFFu
#define TAG_AT 42
#define BUCKETS 20

/* ctx: an array('q') shared with emulator/fastpath.py; the first block is read, the second accumulated. */
enum {
    C_T, C_T_END, C_TIMEOUT, C_T_START, C_DURATION, C_MASK, C_NONCE, C_PO_HEAD, C_PO_ALEN_AT, C_FM_BID_AT,
    C_COUNT_PO, C_COUNT_FM, C_VERSION, C_MAX_LEN,
    C_NRX, C_NRX_IN_TD, C_LATE, C_DUPLICATES, C_STALE, C_OPENED, C_NOT_COUNTED, C_RTT_SUM, C_PO, C_FM,
    C_UNMATCHED, C_ANSWERED, C_N
};

static inline uint32_t be32(const unsigned char *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static inline void put32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24); p[1] = (unsigned char)(v >> 16); p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* Arithmetic on times and counters that come from the caller: never signed overflow (undefined behaviour).  A
 * difference saturates; a sum wraps as two's complement; a bucket is the twentieth of Td a send time falls in,
 * the first when before the start, the last when after the end. */
static inline int64_t sat_sub(int64_t a, int64_t b) {
    int64_t d;
    if (__builtin_sub_overflow(a, b, &d)) return a > b ? INT64_MAX : INT64_MIN;
    return d;
}

static inline int64_t wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }

static inline int64_t bucket_of(int64_t since_start, int64_t duration) {
    if (since_start <= 0) return 0;
    if (since_start >= duration) return BUCKETS - 1;
    return (int64_t)(((__int128)since_start * BUCKETS) / duration);     /* duration > 0: below BUCKETS */
}

#define BUMP(i, v) (x[i] = wrap_add(x[i], (v)))

/* A contiguous buffer of ``o``; for itemsize 8 (the int64 arrays) its elements must be 8 bytes, its length a
 * multiple of 8 and its address aligned for int64 (an array('q') is; a bytes object of 16 bytes is not). */
static int get_buffer(PyObject *o, Py_buffer *b, int writable, Py_ssize_t itemsize, const char *what) {
    if (PyObject_GetBuffer(o, b, (writable ? PyBUF_WRITABLE : PyBUF_SIMPLE) | PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (itemsize > 1 && (b->itemsize != itemsize || b->len % itemsize
                         || ((uintptr_t)b->buf) % _Alignof(int64_t))) {
        PyErr_Format(PyExc_ValueError, "%s: not an array of %zd-byte integers (item size %zd, length %zd)", what,
                     itemsize, b->itemsize, b->len);
        PyBuffer_Release(b);
        return -1;
    }
    return 0;
}

#define FILL_MAX_BYTES ((Py_ssize_t)1 << 30)   /* fill(): at most 1 GiB of messages in one call (a write's worth) */
#define FIELD_MAX 0xFFFF        /* an offset into one OpenFlow message (its length is a 16-bit field) */

/* match(buf, off, ctx, t_sent, s_sent, done, bucket_answered, bucket_rtt, bucket_max_rtt) -> (off, latencies) */
enum { M_BUF, M_CTX, M_T_SENT, M_S_SENT, M_DONE, M_B_ANSWERED, M_B_RTT, M_B_MAX, M_N };
static const struct { int writable; Py_ssize_t itemsize; const char *what; } MATCH_ARGS[M_N] = {
    {0, 1, "buf"}, {1, 8, "ctx"}, {0, 8, "t_sent"}, {0, 8, "s_sent"}, {1, 1, "done"}, {1, 8, "bucket_answered"},
    {1, 8, "bucket_rtt"}, {1, 8, "bucket_max_rtt"}};

/* match() over its arguments' buffers (v, in MATCH_ARGS's order): the answers booked, or NULL with an error set. */
static PyObject *match_buffers(Py_buffer *v, Py_ssize_t off) {
    int64_t *x = (int64_t *)v[M_CTX].buf;
    const unsigned char *p = (const unsigned char *)v[M_BUF].buf;
    const Py_ssize_t n = v[M_BUF].len;
    int64_t *t_sent = (int64_t *)v[M_T_SENT].buf, *s_sent = (int64_t *)v[M_S_SENT].buf;
    unsigned char *done = (unsigned char *)v[M_DONE].buf;
    int64_t *b_ans = (int64_t *)v[M_B_ANSWERED].buf, *b_rtt = (int64_t *)v[M_B_RTT].buf;
    int64_t *b_max = (int64_t *)v[M_B_MAX].buf;
    if (v[M_CTX].len < C_N * 8 || v[M_B_ANSWERED].len < BUCKETS * 8 || v[M_B_RTT].len < BUCKETS * 8
        || v[M_B_MAX].len < BUCKETS * 8) {
        PyErr_SetString(PyExc_ValueError, "ctx or bucket arrays too short");
        return NULL;
    }
    const int64_t mask = x[C_MASK];
    if (mask < 0 || v[M_T_SENT].len / 8 <= mask || v[M_S_SENT].len / 8 <= mask || v[M_DONE].len <= mask) {
        PyErr_SetString(PyExc_ValueError, "ring arrays shorter than mask + 1");
        return NULL;
    }
    /* each layout field an offset into one message (at most 0xFFFF, so no sum below overflows); a PACKET_OUT's
     * fixed head holds its buffer_id (bytes 8-11) and its actions_len; a FLOW_MOD's buffer_id lies past its header */
    if (off < 0 || off > n || x[C_PO_HEAD] < 12 || x[C_PO_HEAD] > FIELD_MAX || x[C_PO_ALEN_AT] < 8
        || x[C_PO_ALEN_AT] > FIELD_MAX || x[C_PO_ALEN_AT] + 2 > x[C_PO_HEAD] || x[C_FM_BID_AT] < 8
        || x[C_FM_BID_AT] > FIELD_MAX || x[C_MAX_LEN] < 8 || x[C_MAX_LEN] > FIELD_MAX) {
        PyErr_SetString(PyExc_ValueError, "match: offset or message layout out of range");
        return NULL;
    }
    const int64_t t = x[C_T], t_end = x[C_T_END], timeout = x[C_TIMEOUT], t_start = x[C_T_START];
    const int64_t duration = x[C_DURATION] > 0 ? x[C_DURATION] : 1;
    const uint32_t nonce = (uint32_t)x[C_NONCE];
    const Py_ssize_t po_head = (Py_ssize_t)x[C_PO_HEAD], alen_at = (Py_ssize_t)x[C_PO_ALEN_AT];
    const Py_ssize_t fm_at = (Py_ssize_t)x[C_FM_BID_AT], max_len = (Py_ssize_t)x[C_MAX_LEN];
    const int count_po = (int)x[C_COUNT_PO], count_fm = (int)x[C_COUNT_FM];
    const unsigned char version = (unsigned char)x[C_VERSION];
    /* at most one latency per 8 bytes */
    PyObject *lat = PyBytes_FromStringAndSize(NULL, ((n > off ? n - off : 0) / 8) * 8);
    if (!lat) return NULL;
    int64_t *lp = (int64_t *)PyBytes_AS_STRING(lat);
    Py_ssize_t nlat = 0;

    while (n - off >= 8) {
        const unsigned char *m = p + off;
        Py_ssize_t length = ((Py_ssize_t)m[2] << 8) | m[3];
        if (length < 8 || length > max_len) break;              /* Python aborts the session */
        Py_ssize_t end = off + length;
        if (end > n) break;                                     /* incomplete: Python keeps it */
        if (m[0] != version) break;
        uint32_t seq;
        int kind;
        if (m[1] == PACKET_OUT) {
            if (length < po_head) break;                        /* Python names it malformed */
            kind = 0;
            seq = be32(m + 8);
            if (seq == NO_BUFFER) {
                Py_ssize_t tag_at = po_head + (((Py_ssize_t)m[alen_at] << 8) | m[alen_at + 1]) + TAG_AT;
                if (tag_at + 8 > length) {
                    BUMP(C_UNMATCHED, 1);
                    off = end;
                    continue;
                }
                if (be32(m + tag_at) != nonce) {
                    BUMP(C_STALE, 1);
                    off = end;
                    continue;
                }
                seq = be32(m + tag_at + 4);
            }
        } else if (m[1] == FLOW_MOD) {
            kind = 1;
            if (fm_at + 4 > length) {
                BUMP(C_UNMATCHED, 1);
                off = end;
                continue;
            }
            seq = be32(m + fm_at);
            if (seq == NO_BUFFER) break;                        /* matched by its eth_src: Python */
        } else {
            break;
        }
        off = end;
        if (!(kind ? count_fm : count_po)) {
            BUMP(C_NOT_COUNTED, 1);
            continue;
        }
        int64_t i = (int64_t)seq & mask;
        if (s_sent[i] != (int64_t)seq) {
            BUMP(C_STALE, 1);
            continue;
        }
        if (done[i]) {
            BUMP(C_DUPLICATES, 1);
            continue;
        }
        done[i] = 1;
        BUMP(C_OPENED, 1);
        BUMP(kind ? C_FM : C_PO, 1);
        BUMP(C_ANSWERED, 1);
        int64_t sent = t_sent[i], rtt = sat_sub(t, sent);
        if (t <= t_end) BUMP(C_NRX_IN_TD, 1);
        if (rtt > timeout) {
            BUMP(C_LATE, 1);
        } else {
            BUMP(C_NRX, 1);
            BUMP(C_RTT_SUM, rtt);
            lp[nlat++] = rtt;
            int64_t bk = bucket_of(sat_sub(sent, t_start), duration);
            b_ans[bk] = wrap_add(b_ans[bk], 1);
            b_rtt[bk] = wrap_add(b_rtt[bk], rtt);
            if (rtt > b_max[bk]) b_max[bk] = rtt;
        }
    }
    if (_PyBytes_Resize(&lat, nlat * 8) < 0) return NULL;
    return Py_BuildValue("nN", off, lat);
}

static PyObject *match(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[M_N];
    Py_buffer v[M_N];
    Py_ssize_t off;
    if (!PyArg_ParseTuple(args, "OnOOOOOOO", &o[M_BUF], &off, &o[M_CTX], &o[M_T_SENT], &o[M_S_SENT], &o[M_DONE],
                          &o[M_B_ANSWERED], &o[M_B_RTT], &o[M_B_MAX]))
        return NULL;
    int got = 0;
    while (got < M_N && get_buffer(o[got], &v[got], MATCH_ARGS[got].writable, MATCH_ARGS[got].itemsize,
                                   MATCH_ARGS[got].what) == 0)
        got++;
    PyObject *result = got == M_N ? match_buffers(v, off) : NULL;
    while (got > 0)
        PyBuffer_Release(&v[--got]);
    return result;
}

/* The null controller's PACKET_OUT for the PACKET_IN at m (``length`` bytes, of ``version``), written at a (room for
 * PO_MAX bytes), flooding its buffer: the answer's length, or 0 when Python must answer it (too short, another
 * match first, unbuffered: the answer then carries the frame).  *xid is the controller's last xid, advanced by one
 * for an answer. */
#define PO_MAX 40
static Py_ssize_t packet_out_for(const unsigned char *m, Py_ssize_t length, int version, uint32_t *xid,
                                 unsigned char *a) {
    const Py_ssize_t po_len = version == OFP10 ? 24 : 40;
    uint32_t buffer_id, in_port;
    if (version == OFP10) {
        if (length < 18) return 0;
        buffer_id = be32(m + 8);
        in_port = ((uint32_t)m[14] << 8) | m[15];
    } else {
        /* the usual single-field match: OXM OFB_IN_PORT (0x80000004) first */
        if (length < 36 || be32(m + 28) != 0x80000004u) return 0;
        buffer_id = be32(m + 8);
        in_port = be32(m + 32);
    }
    if (buffer_id == NO_BUFFER) return 0;
    *xid = *xid + 1;
    memset(a, 0, po_len);
    a[0] = (unsigned char)version;
    a[1] = PACKET_OUT;
    a[3] = (unsigned char)po_len;
    put32(a + 4, *xid);
    put32(a + 8, buffer_id);
    if (version == OFP10) {                                 /* in_port, actions_len 8, OUTPUT to FLOOD */
        a[12] = (unsigned char)(in_port >> 8); a[13] = (unsigned char)in_port;
        a[15] = 8;
        a[17] = 0; a[19] = 8;                               /* type OUTPUT (0), len 8 */
        a[20] = 0xFF; a[21] = 0xFB;                         /* OFPP_FLOOD (1.0) */
    } else {                                                /* in_port, actions_len 16, OUTPUT to FLOOD */
        put32(a + 12, in_port);
        a[17] = 16;
        a[27] = 16;                                         /* type OUTPUT (0), len 16 */
        put32(a + 28, 0xFFFFFFFBu);                         /* OFPP_FLOOD (1.3) */
    }
    return po_len;
}

/* packet_outs(buf, off, version, xid, answer) -> (off, answers, count, xid): consecutive buffered PACKET_INs of
 * ``version`` answered with a PACKET_OUT flooding the buffer (answer 0: only counted, as a sink); stops at anything
 * else (Python's turn). */
static PyObject *packet_outs(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o_buf;
    Py_ssize_t off;
    int version, answer;
    unsigned long long xid_in;
    if (!PyArg_ParseTuple(args, "OniKp", &o_buf, &off, &version, &xid_in, &answer)) return NULL;
    Py_buffer b;
    if (get_buffer(o_buf, &b, 0, 1, "buf") < 0) return NULL;
    const unsigned char *p = (const unsigned char *)b.buf;
    const Py_ssize_t n = b.len;
    if (off < 0 || off > n) {
        PyBuffer_Release(&b);
        PyErr_SetString(PyExc_ValueError, "packet_outs: offset out of range");
        return NULL;
    }
    uint32_t xid = (uint32_t)xid_in;
    /* a PACKET_IN is at least 18 bytes (1.0) or 36 (1.3, as answered here): room for every answer */
    Py_ssize_t most = answer && n > off ? (n - off) / 18 + 1 : 0;
    PyObject *out = PyBytes_FromStringAndSize(NULL, most * PO_MAX);
    if (!out) { PyBuffer_Release(&b); return NULL; }
    unsigned char *q = (unsigned char *)PyBytes_AS_STRING(out);
    Py_ssize_t count = 0, used = 0;
    while (n - off >= 8) {
        const unsigned char *m = p + off;
        Py_ssize_t length = ((Py_ssize_t)m[2] << 8) | m[3];
        if (length < 8 || off + length > n || m[0] != version || m[1] != PACKET_IN) break;
        if (answer) {
            Py_ssize_t k = packet_out_for(m, length, version, &xid, q + used);
            if (!k) break;                                  /* Python answers it */
            used += k;
        }
        count++;
        off += length;
    }
    PyBuffer_Release(&b);
    if (_PyBytes_Resize(&out, used) < 0) return NULL;
    return Py_BuildValue("nNnK", off, out, count, (unsigned long long)xid);
}

/* respond(fd, version, xid, answer) -> (count, xid, rest, closed): the null controller's compiled responder on one
 * connected, blocking socket.  Without the GIL it reads the session and answers as packet_outs() does (answer 0:
 * a sink), and each ECHO_REQUEST of up to 160 bytes with its ECHO_REPLY.  It blocks in read() between messages
 * (no polling) and returns when the peer closes (closed True; rest: an incomplete message left at the end) or at
 * the first message it leaves to Python (any other type, an unbuffered or unusual PACKET_IN, another version, a
 * length below 8: rest holds it and whatever followed it).  count: the PACKET_INs it read.  A read or write error
 * raises OSError. */
#define RESPOND_BUF 65536
static PyObject *respond(PyObject *self, PyObject *args) {
    (void)self;
    int fd, version, answer;
    unsigned long long xid_in;
    if (!PyArg_ParseTuple(args, "iiKp", &fd, &version, &xid_in, &answer)) return NULL;
    if (fd < 0 || (version != OFP10 && version != 4)) {
        PyErr_SetString(PyExc_ValueError, "respond: a socket and OpenFlow 1.0 or 1.3");
        return NULL;
    }
    unsigned char *in = PyMem_RawMalloc(RESPOND_BUF), *out = PyMem_RawMalloc(RESPOND_BUF / 8 * PO_MAX);
    if (!in || !out) {
        PyMem_RawFree(in);
        PyMem_RawFree(out);
        return PyErr_NoMemory();
    }
    uint32_t xid = (uint32_t)xid_in;
    Py_ssize_t have = 0, off = 0, count = 0;
    int closed = 0, err = 0, stop = 0;
    Py_BEGIN_ALLOW_THREADS
    while (!stop) {
        ssize_t k = read(fd, in + have, RESPOND_BUF - have);
        if (k < 0) {
            if (errno == EINTR) continue;
            err = errno;
            break;
        }
        if (k == 0) {
            closed = 1;
            break;
        }
        have += k;
        Py_ssize_t used = 0;
        off = 0;
        while (have - off >= 8) {
            const unsigned char *m = in + off;
            Py_ssize_t length = ((Py_ssize_t)m[2] << 8) | m[3];
            if (length < 8 || m[0] != version) { stop = 1; break; }
            if (off + length > have) break;                 /* incomplete: read more */
            if (m[1] == PACKET_IN) {
                Py_ssize_t a = answer ? packet_out_for(m, length, version, &xid, out + used) : PO_MAX;
                if (!a) { stop = 1; break; }
                if (answer) used += a;
                count++;
            } else if (m[1] == ECHO_REQUEST && length <= PO_MAX * 4
                       && used + length <= RESPOND_BUF / 8 * PO_MAX) {
                memcpy(out + used, m, length);
                out[used + 1] = ECHO_REPLY;
                used += length;
            } else {
                stop = 1;                                       /* any other message (a FEATURES_REPLY): Python's */
                break;
            }
            off += length;
        }
        for (Py_ssize_t sent = 0; sent < used && !err;) {
            ssize_t w = write(fd, out + sent, used - sent);
            if (w < 0) {
                if (errno != EINTR) err = errno;
                continue;
            }
            sent += w;
        }
        if (err || stop) break;
        memmove(in, in + off, have - off);                  /* an incomplete message moves to the front */
        have -= off;
        off = 0;
    }
    Py_END_ALLOW_THREADS
    PyObject *result = NULL;
    if (err) {
        errno = err;
        PyErr_SetFromErrno(PyExc_OSError);
    } else {
        result = Py_BuildValue("nKy#O", count, (unsigned long long)xid, (const char *)in + off, have - off,
                               closed ? Py_True : Py_False);
    }
    PyMem_RawFree(in);
    PyMem_RawFree(out);
    return result;
}

/* fill(block, length, n, seq, count, xid_at, bid_at, seq_at) -> bytes: the messages of requests seq ..
 * seq+count-1 from a PacketInBlock's n templates of ``length`` bytes; request s is template s % n with s written
 * (big-endian u32) at xid_at, bid_at (when >= 0: buffered) and seq_at.  The template block is left as it was. */
static PyObject *fill(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o_block;
    Py_ssize_t length, n, bid_at, xid_at, seq_at, count;
    unsigned long long seq;
    if (!PyArg_ParseTuple(args, "OnnKnnnn", &o_block, &length, &n, &seq, &count, &xid_at, &bid_at, &seq_at))
        return NULL;
    Py_buffer b;
    if (get_buffer(o_block, &b, 0, 1, "block") < 0) return NULL;
    /* by division and subtraction, never a product or sum that could overflow: n templates of ``length`` bytes
     * within the block, ``count`` messages within one bytes object, each field's 4 bytes within a message */
    if (n <= 0 || length < 4 || count < 0 || n > b.len / length || count > FILL_MAX_BYTES / length
        || xid_at < 0 || seq_at < 0 || bid_at < -1 || xid_at > length - 4 || seq_at > length - 4
        || bid_at > length - 4) {
        PyBuffer_Release(&b);
        PyErr_SetString(PyExc_ValueError, "fill: bad block geometry");
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, count * length);
    if (!out) { PyBuffer_Release(&b); return NULL; }
    unsigned char *q = (unsigned char *)PyBytes_AS_STRING(out);
    const unsigned char *src = (const unsigned char *)b.buf;
    Py_ssize_t i = (Py_ssize_t)(seq % (unsigned long long)n);
    for (Py_ssize_t k = 0; k < count; k++) {
        uint32_t s = (uint32_t)(seq + (unsigned long long)k);
        memcpy(q, src + i * length, length);
        put32(q + xid_at, s);
        if (bid_at >= 0) put32(q + bid_at, s);
        put32(q + seq_at, s);
        q += length;
        if (++i == n) i = 0;
    }
    PyBuffer_Release(&b);
    return out;
}

static PyMethodDef methods[] = {
    {"match", match, METH_VARARGS, "Match a buffer's answers to a switch's requests (see emulator/fastpath.py)."},
    {"packet_outs", packet_outs, METH_VARARGS, "The null controller's PACKET_OUTs for a buffer's PACKET_INs."},
    {"fill", fill, METH_VARARGS, "A PacketInBlock's messages for consecutive requests."},
    {"respond", respond, METH_VARARGS, "The null controller's compiled responder on one blocking socket."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastpath", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__fastpath(void) {
    PyObject *m = PyModule_Create(&module);
    if (m && PyModule_AddIntConstant(m, "CTX_LEN", C_N) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
