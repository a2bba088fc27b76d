/* The emulator's PACKET_IN path over whole receive buffers (emulator/fastpath.py loads it; it is optional).
 *
 * match():       a TrafficSwitch's answers, PACKET_OUT and buffered FLOW_MOD, matched to its requests and booked,
 *                message after message, until one it leaves to Python (another type, an unbuffered FLOW_MOD, a
 *                short or malformed one, or an incomplete one at the end of the buffer).
 * packet_outs(): the null controller's answers, one PACKET_OUT per buffered PACKET_IN, built in one buffer.
 * fill():        a PacketInBlock's messages for requests seq .. seq+count-1 copied out with their sequence numbers.
 *
 * Each does exactly what the pure-Python code beside it does (emulator/traffic.py, emulator/nullctl.py,
 * emulator/frames.py); tests/test_fastpath.py runs the same unit tests over both.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define OFP10 1
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

static int get_buffer(PyObject *o, Py_buffer *b, int writable, Py_ssize_t itemsize, const char *what) {
    if (PyObject_GetBuffer(o, b, writable ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0)
        return -1;
    if (itemsize > 1 && b->len % itemsize) {
        PyBuffer_Release(b);
        PyErr_Format(PyExc_ValueError, "%s: length %zd is not a multiple of %zd", what, b->len, itemsize);
        return -1;
    }
    return 0;
}

/* match(buf, off, ctx, t_sent, s_sent, done, bucket_answered, bucket_rtt, bucket_max_rtt) -> (off, latencies) */
static PyObject *match(PyObject *self, PyObject *args) {
    PyObject *o_buf, *o_ctx, *o_t, *o_s, *o_done, *o_ba, *o_br, *o_bm;
    Py_ssize_t off;
    if (!PyArg_ParseTuple(args, "OnOOOOOOO", &o_buf, &off, &o_ctx, &o_t, &o_s, &o_done, &o_ba, &o_br, &o_bm))
        return NULL;
    Py_buffer b, c, ts, ss, dn, ba, br, bm;
    if (get_buffer(o_buf, &b, 0, 1, "buf") < 0) return NULL;
    if (get_buffer(o_ctx, &c, 1, 8, "ctx") < 0) goto e0;
    if (get_buffer(o_t, &ts, 0, 8, "t_sent") < 0) goto e1;
    if (get_buffer(o_s, &ss, 0, 8, "s_sent") < 0) goto e2;
    if (get_buffer(o_done, &dn, 1, 1, "done") < 0) goto e3;
    if (get_buffer(o_ba, &ba, 1, 8, "bucket_answered") < 0) goto e4;
    if (get_buffer(o_br, &br, 1, 8, "bucket_rtt") < 0) goto e5;
    if (get_buffer(o_bm, &bm, 1, 8, "bucket_max_rtt") < 0) goto e6;

    int64_t *x = (int64_t *)c.buf;
    const unsigned char *p = (const unsigned char *)b.buf;
    const Py_ssize_t n = b.len;
    int64_t *t_sent = (int64_t *)ts.buf, *s_sent = (int64_t *)ss.buf;
    unsigned char *done = (unsigned char *)dn.buf;
    int64_t *b_ans = (int64_t *)ba.buf, *b_rtt = (int64_t *)br.buf, *b_max = (int64_t *)bm.buf;
    PyObject *result = NULL, *lat = NULL;
    if (c.len < C_N * 8 || ba.len < BUCKETS * 8 || br.len < BUCKETS * 8 || bm.len < BUCKETS * 8) {
        PyErr_SetString(PyExc_ValueError, "ctx or bucket arrays too short");
        goto e7;
    }
    const int64_t mask = x[C_MASK];
    if (mask < 0 || ts.len / 8 <= mask || ss.len / 8 <= mask || dn.len <= mask) {
        PyErr_SetString(PyExc_ValueError, "ring arrays shorter than mask + 1");
        goto e7;
    }
    if (off < 0 || off > n || x[C_PO_ALEN_AT] < 8 || x[C_PO_ALEN_AT] + 2 > x[C_PO_HEAD] || x[C_FM_BID_AT] < 8) {
        PyErr_SetString(PyExc_ValueError, "match: offset or message layout out of range");
        goto e7;
    }
    const int64_t t = x[C_T], t_end = x[C_T_END], timeout = x[C_TIMEOUT], t_start = x[C_T_START];
    const int64_t duration = x[C_DURATION] > 0 ? x[C_DURATION] : 1;
    const uint32_t nonce = (uint32_t)x[C_NONCE];
    const Py_ssize_t po_head = (Py_ssize_t)x[C_PO_HEAD], alen_at = (Py_ssize_t)x[C_PO_ALEN_AT];
    const Py_ssize_t fm_at = (Py_ssize_t)x[C_FM_BID_AT], max_len = (Py_ssize_t)x[C_MAX_LEN];
    const int count_po = (int)x[C_COUNT_PO], count_fm = (int)x[C_COUNT_FM];
    const unsigned char version = (unsigned char)x[C_VERSION];
    /* at most one latency per 8 bytes */
    lat = PyBytes_FromStringAndSize(NULL, ((n > off ? n - off : 0) / 8) * 8);
    if (!lat) goto e7;
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
                    x[C_UNMATCHED]++;
                    off = end;
                    continue;
                }
                if (be32(m + tag_at) != nonce) {
                    x[C_STALE]++;
                    off = end;
                    continue;
                }
                seq = be32(m + tag_at + 4);
            }
        } else if (m[1] == FLOW_MOD) {
            kind = 1;
            if (fm_at + 4 > length) {
                x[C_UNMATCHED]++;
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
            x[C_NOT_COUNTED]++;
            continue;
        }
        int64_t i = (int64_t)seq & mask;
        if (s_sent[i] != (int64_t)seq) {
            x[C_STALE]++;
            continue;
        }
        if (done[i]) {
            x[C_DUPLICATES]++;
            continue;
        }
        done[i] = 1;
        x[C_OPENED]++;
        x[kind ? C_FM : C_PO]++;
        x[C_ANSWERED]++;
        int64_t sent = t_sent[i], rtt = t - sent;
        if (t <= t_end) x[C_NRX_IN_TD]++;
        if (rtt > timeout) {
            x[C_LATE]++;
        } else {
            x[C_NRX]++;
            x[C_RTT_SUM] += rtt;
            lp[nlat++] = rtt;
            int64_t bk = (sent - t_start) * BUCKETS / duration;
            if (sent < t_start || bk < 0) bk = 0;
            if (bk >= BUCKETS) bk = BUCKETS - 1;
            b_ans[bk]++;
            b_rtt[bk] += rtt;
            if (rtt > b_max[bk]) b_max[bk] = rtt;
        }
    }
    if (_PyBytes_Resize(&lat, nlat * 8) < 0) goto e7;
    result = Py_BuildValue("nN", off, lat);
    lat = NULL;
e7:
    Py_XDECREF(lat);
    PyBuffer_Release(&bm);
e6: PyBuffer_Release(&br);
e5: PyBuffer_Release(&ba);
e4: PyBuffer_Release(&dn);
e3: PyBuffer_Release(&ss);
e2: PyBuffer_Release(&ts);
e1: PyBuffer_Release(&c);
e0: PyBuffer_Release(&b);
    return result;
}

/* packet_outs(buf, off, version, xid, answer) -> (off, answers, count, xid): consecutive buffered PACKET_INs of
 * ``version`` answered with a PACKET_OUT flooding the buffer (answer 0: only counted, as a sink); stops at anything
 * else (Python's turn). */
static PyObject *packet_outs(PyObject *self, PyObject *args) {
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
    const Py_ssize_t po_len = version == OFP10 ? 24 : 40;
    uint32_t xid = (uint32_t)xid_in;
    /* a PACKET_IN is at least 18 bytes (1.0) or 34 (1.3): room for every answer */
    Py_ssize_t most = answer && n > off ? (n - off) / 18 + 1 : 0;
    PyObject *out = PyBytes_FromStringAndSize(NULL, most * po_len);
    if (!out) { PyBuffer_Release(&b); return NULL; }
    unsigned char *q = (unsigned char *)PyBytes_AS_STRING(out);
    Py_ssize_t count = 0;
    while (n - off >= 8) {
        const unsigned char *m = p + off;
        Py_ssize_t length = ((Py_ssize_t)m[2] << 8) | m[3];
        if (length < 8 || off + length > n || m[0] != version || m[1] != PACKET_IN) break;
        if (!answer) {                                          /* a sink: read and dropped */
            count++;
            off += length;
            continue;
        }
        uint32_t buffer_id, in_port;
        if (version == OFP10) {
            if (length < 18) break;
            buffer_id = be32(m + 8);
            in_port = ((uint32_t)m[14] << 8) | m[15];
        } else {
            /* the usual single-field match: OXM OFB_IN_PORT (0x80000004) first */
            if (length < 36 || be32(m + 28) != 0x80000004u) break;
            buffer_id = be32(m + 8);
            in_port = be32(m + 32);
        }
        if (buffer_id == NO_BUFFER) break;                      /* the answer carries the frame: Python */
        xid = xid + 1;
        unsigned char *a = q + count * po_len;
        memset(a, 0, po_len);
        a[0] = (unsigned char)version;
        a[1] = PACKET_OUT;
        a[3] = (unsigned char)po_len;
        put32(a + 4, xid);
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
        count++;
        off += length;
    }
    PyBuffer_Release(&b);
    if (_PyBytes_Resize(&out, answer ? count * po_len : 0) < 0) return NULL;
    return Py_BuildValue("nNnK", off, out, count, (unsigned long long)xid);
}

/* fill(block, length, n, seq, count, xid_at, bid_at, seq_at) -> bytes: the messages of requests seq ..
 * seq+count-1 from a PacketInBlock's n templates of ``length`` bytes; request s is template s % n with s written
 * (big-endian u32) at xid_at, bid_at (when >= 0: buffered) and seq_at.  The template block is left as it was. */
static PyObject *fill(PyObject *self, PyObject *args) {
    PyObject *o_block;
    Py_ssize_t length, n, bid_at, xid_at, seq_at, count;
    unsigned long long seq;
    if (!PyArg_ParseTuple(args, "OnnKnnnn", &o_block, &length, &n, &seq, &count, &xid_at, &bid_at, &seq_at))
        return NULL;
    Py_buffer b;
    if (get_buffer(o_block, &b, 0, 1, "block") < 0) return NULL;
    if (n <= 0 || length <= 0 || count < 0 || b.len < n * length || xid_at < 0 || seq_at < 0
        || xid_at + 4 > length || seq_at + 4 > length || bid_at + 4 > length) {
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
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastpath", NULL, -1, methods};

PyMODINIT_FUNC PyInit__fastpath(void) {
    PyObject *m = PyModule_Create(&module);
    if (m && PyModule_AddIntConstant(m, "CTX_LEN", C_N) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
