"""tests/nvmf/nvmf_client.py — a small NVMe/TCP host for the tests.

Speaks the host side of NVMe/TCP well enough to drive offcore-nvmf through
every path (ICReq, Connect, properties, Identify, Read, Write in-capsule and
through R2T/H2CData), and badly on purpose: every builder takes overrides
so that a test can send wrong lengths, digests, opcodes and sequences.
Synchronous and one command at a time unless the caller pipelines.
"""
import socket
import struct

CMD, RSP, H2C, C2H, R2T, ICRESP, C2HTERM = 0x04, 0x05, 0x06, 0x07, 0x09, 0x01, 0x03
F_HDGST, F_DDGST, F_LAST = 0x01, 0x02, 0x04
DISC = "nqn.2014-08.org.nvmexpress.discovery"

_T = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    _T.append(c)


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = _T[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


class Closed(Exception):
    pass


def sc(status):
    """(SCT << 8) | SC of a completion's status field."""
    return (status >> 1) & 0x7FF


class Pdu:
    def __init__(self, raw):
        self.raw = raw
        self.type, self.flags, self.hlen, self.pdo, self.plen = \
            struct.unpack_from("<BBBBI", raw)

    def cqe(self):
        dw0, dw1, sqhd, sqid, cid, status = struct.unpack_from("<IIHHHH", self.raw, 8)
        return {"dw0": dw0, "dw1": dw1, "cid": cid, "status": status,
                "sc": sc(status)}


class Host:
    def __init__(self, port, host="127.0.0.1", timeout=10, rcvbuf=None):
        self.s = socket.socket()
        if rcvbuf:  # before connect, so that the window starts small
            self.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.s.settimeout(timeout)
        self.s.connect((host, port))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.hd = self.dd = False
        self.cid = 0
        self.held = None

    def close(self):
        self.s.close()

    # --------------------------------------------------------------- I/O
    def send(self, b):
        if self.held is not None:
            self.held += b
        else:
            self.s.sendall(b)

    def hold(self):
        """Collect what the builders send until flush(), which sends it
        in one sendall: several PDUs in one TCP segment (when it fits)."""
        self.held = bytearray()

    def flush(self):
        b, self.held = bytes(self.held), None
        self.s.sendall(b)

    def recvn(self, n):
        out = b""
        while len(out) < n:
            c = self.s.recv(n - len(out))
            if not c:
                raise Closed("connection closed after %d of %d bytes" % (len(out), n))
            out += c
        return out

    def recv_pdu(self):
        ch = self.recvn(8)
        plen = struct.unpack_from("<I", ch, 4)[0]
        if plen < 8 or plen > (1 << 24):
            raise ValueError("bad plen %d" % plen)
        p = Pdu(ch + self.recvn(plen - 8))
        if self.hd and p.type in (RSP, C2H, R2T):
            if struct.unpack_from("<I", p.raw, p.hlen)[0] != crc32c(p.raw[:p.hlen]):
                raise ValueError("bad header digest from target")
        return p

    def expect_eof(self):
        """True when the target closed the connection (after a TermReq)."""
        try:
            while True:
                if not self.s.recv(65536):
                    return True
        except (ConnectionResetError, socket.timeout):
            return False

    # -------------------------------------------------------------- PDUs
    def icreq(self, hd=False, dd=False, plen=128, pfv=0):
        self.hd, self.dd = hd, dd
        b = bytearray(128)
        struct.pack_into("<BBBBIHBBI", b, 0, 0, 0, 128, 0, plen, pfv, 0,
                         (1 if hd else 0) | (2 if dd else 0), 0)
        self.send(bytes(b[:max(plen, 8)] if plen < 128 else b))

    def icresp(self):
        p = self.recv_pdu()
        assert p.type == ICRESP, "expected ICResp, got type %d" % p.type
        return p

    def sqe(self, opc, nsid=0, cdw=None, sgl_len=0, sgl_type=0x5A, fct=0):
        self.cid = (self.cid + 1) & 0xFFFF
        b = bytearray(64)
        struct.pack_into("<BBHI", b, 0, opc, 0x40, self.cid, nsid)
        if opc == 0x7F:
            b[4] = fct
        struct.pack_into("<QI", b, 24, 0, sgl_len)
        b[39] = sgl_type
        for i, v in (cdw or {}).items():
            struct.pack_into("<I", b, 4 * i, v & 0xFFFFFFFF)
        return b

    def capsule(self, sqe, data=b"", bad_hdgst=False, bad_ddgst=False,
                plen_delta=0):
        hd = 4 if self.hd else 0
        dd = 4 if self.dd and data else 0
        pdo = 72 + hd if data else 0
        plen = 72 + hd + len(data) + dd + plen_delta
        flags = (F_HDGST if self.hd else 0) | (F_DDGST if dd else 0)
        hdr = struct.pack("<BBBBI", CMD, flags, 72, pdo, plen) + bytes(sqe)
        out = hdr
        if hd:
            out += struct.pack("<I", crc32c(hdr) ^ (1 if bad_hdgst else 0))
        out += data
        if dd:
            out += struct.pack("<I", crc32c(data) ^ (1 if bad_ddgst else 0))
        self.send(out)

    def h2c(self, cccid, ttag, off, data, last=True, datal=None):
        hd = 4 if self.hd else 0
        dd = 4 if self.dd else 0
        dl = len(data) if datal is None else datal
        flags = (F_HDGST if hd else 0) | (F_DDGST if dd else 0) | (F_LAST if last else 0)
        hdr = struct.pack("<BBBBIHHII4x", H2C, flags, 24, 24 + hd,
                          24 + hd + len(data) + dd, cccid, ttag, off, dl)
        out = hdr + (struct.pack("<I", crc32c(hdr)) if hd else b"") + data
        if dd:
            out += struct.pack("<I", crc32c(data))
        self.send(out)

    def response(self):
        """Next completion; C2HData before it is gathered into 'data'."""
        data = b""
        while True:
            p = self.recv_pdu()
            if p.type == C2H:
                dl = struct.unpack_from("<I", p.raw, 16)[0]
                data += p.raw[p.pdo:p.pdo + dl]
                continue
            if p.type == RSP:
                r = p.cqe()
                r["data"] = data
                return r
            if p.type == C2HTERM:
                fes = struct.unpack_from("<H", p.raw, 8)[0]
                raise Closed("C2HTermReq FES %d" % fes)
            raise ValueError("unexpected PDU type %d" % p.type)

    def cmd(self, sqe, data=b""):
        self.capsule(sqe, data)
        return self.response()

    # ----------------------------------------------------------- fabrics
    def connect(self, subnqn, hostnqn, qid=0, cntlid=0xFFFF, sqsize=31,
                kato=0, hostid=b"\x11" * 16):
        self.connect_capsule(subnqn, hostnqn, qid, cntlid, sqsize, kato, hostid)
        return self.response()

    def connect_capsule(self, subnqn, hostnqn, qid=0, cntlid=0xFFFF,
                        sqsize=31, kato=0, hostid=b"\x11" * 16):
        """Send a Connect; its answer is the next response()."""
        d = bytearray(1024)
        d[0:16] = hostid
        struct.pack_into("<H", d, 16, cntlid)
        sub = subnqn.encode()
        hst = hostnqn.encode()
        d[256:256 + len(sub)] = sub
        d[512:512 + len(hst)] = hst
        s = self.sqe(0x7F, fct=0x01, sgl_len=1024, sgl_type=0x01,
                     cdw={10: qid << 16, 11: sqsize, 12: kato})
        self.capsule(s, bytes(d))

    def prop_get(self, off, size8=False):
        r = self.cmd(self.sqe(0x7F, fct=0x04, cdw={10: 1 if size8 else 0, 11: off}))
        return r, r["dw0"] | (r["dw1"] << 32)

    def prop_set(self, off, val):
        return self.cmd(self.sqe(0x7F, fct=0x00, cdw={11: off, 12: val}))

    def admin_session(self, subnqn, hostnqn, hd=False, dd=False):
        self.icreq(hd, dd)
        self.icresp()
        r = self.connect(subnqn, hostnqn)
        assert r["sc"] == 0, "Connect failed: %#x" % r["sc"]
        self.cntlid = r["dw0"] & 0xFFFF
        self.prop_set(0x14, (6 << 16) | (4 << 20) | 1)
        return r

    def identify(self, cns, nsid=0):
        return self.cmd(self.sqe(0x06, nsid=nsid, sgl_len=4096, cdw={10: cns}))

    def set_queues(self, n):
        return self.cmd(self.sqe(0x09, cdw={10: 0x07, 11: (n - 1) | ((n - 1) << 16)}))

    # --------------------------------------------------------------- I/O
    def write(self, nsid, slba, data, bs=4096, incap_max=8192, fua=False):
        nlb = len(data) // bs
        cdw = {10: slba & 0xFFFFFFFF, 11: slba >> 32,
               12: (nlb - 1) | ((1 << 30) if fua else 0)}
        if len(data) <= incap_max:
            s = self.sqe(0x01, nsid=nsid, sgl_len=len(data), sgl_type=0x01, cdw=cdw)
            return self.cmd(s, data)
        s = self.sqe(0x01, nsid=nsid, sgl_len=len(data), cdw=cdw)
        self.capsule(s)
        p = self.recv_pdu()
        if p.type == RSP:
            return p.cqe()
        assert p.type == R2T, "expected R2T, got %d" % p.type
        cccid, ttag, off, ln = struct.unpack_from("<HHII", p.raw, 8)
        self.h2c(cccid, ttag, off, data[off:off + ln])
        return self.response()

    def read(self, nsid, slba, nbytes, bs=4096):
        nlb = nbytes // bs
        s = self.sqe(0x02, nsid=nsid, sgl_len=nbytes,
                     cdw={10: slba & 0xFFFFFFFF, 11: slba >> 32, 12: nlb - 1})
        return self.cmd(s)


def io_session(port, subnqn, hostnqn, cntlid, qid=1, hd=False, dd=False,
               rcvbuf=None):
    h = Host(port, rcvbuf=rcvbuf)
    h.icreq(hd, dd)
    h.icresp()
    r = h.connect(subnqn, hostnqn, qid=qid, cntlid=cntlid)
    assert r["sc"] == 0, "I/O Connect failed: %#x" % r["sc"]
    return h
