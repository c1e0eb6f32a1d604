#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""Writes the dat_api fuzzer's seed programs (testing/fuzz/corpus/dat_api/).

The programs are what a consumer does: open objects, connect two EPs over loopback, post
receives (to the EP and to an SRQ), Sends, RDMA Writes and Reads, bind an RMR, disconnect, free.
The fuzzer mutates them into the wrong handles, null pointers, bad flags and lengths. Each
helper below reads its arguments in the order Step() in dat_api_fuzzer.cc does; keep them in
step. Usage: dat_api_seeds.py OUT_FOLDER (run.sh seeds).
"""
import struct
import sys
from pathlib import Path

# Handle kinds (dat_api_fuzzer.cc: Kind) and the special selectors.
IA, EVD, EP, PZ, LMR, RMR, PSP, RSP, CR, CNO, SRQ = range(11)
NULL = 0xC0

# EVD flags, memory privileges (dat2/dat.h).
EVD_CR, EVD_DTO, EVD_CONNECTION, EVD_RMR_BIND = 0x10, 0x20, 0x40, 0x80
PRIV_ALL = 0x33


class Program:
    def __init__(self):
        self.b = bytearray()

    def u8(self, v):
        self.b.append(v & 0xFF)

    def u16(self, v):
        self.b += struct.pack('<H', v)

    def u32(self, v):
        self.b += struct.pack('<I', v & 0xFFFFFFFF)

    def u64(self, v):
        self.b += struct.pack('<Q', v)

    def count(self, v):
        assert 0 <= v < 70
        self.u8(v)

    def h(self, kind, which=0):
        self.u8(kind << 4 | which)

    def out(self, valid=True):
        self.u8(1 if valid else 0)

    def place(self, offset, length):
        self.u32(offset)
        self.u32(length)

    def iov(self, segments):
        """segments: (lmr index, offset, length)."""
        self.count(len(segments))
        self.u8(1)
        for lmr, offset, length in segments:
            self.u8(lmr)
            self.u8(1)
            self.place(offset, length)

    # One helper per op, reading as Step() does.
    def pz_create(self):
        self.u8(6); self.h(IA); self.out()

    def evd_create(self, qlen, flags):
        self.u8(9); self.h(IA); self.count(qlen); self.u8(NULL); self.u8(1); self.u8(flags); self.out()

    def lmr_create(self, offset, length, privileges=PRIV_ALL):
        self.u8(36); self.h(IA); self.u8(3); self.place(offset, length); self.h(PZ)
        self.u8(1); self.u8(privileges); self.u8(0)
        for _ in range(5):
            self.out()

    def psp_create_any(self, cr_evd):
        self.u8(47); self.h(IA); self.h(EVD, cr_evd); self.u8(0); self.out(); self.out()

    def ep_create(self, recv, request, connect, srq=None):
        self.u8(19 if srq is None else 20)
        self.h(IA); self.h(PZ); self.h(EVD, recv); self.h(EVD, request); self.h(EVD, connect)
        if srq is not None:
            self.h(SRQ, srq)
        self.u8(0); self.out()

    def srq_create(self, max_recv_dtos):
        self.u8(59); self.h(IA); self.h(PZ); self.count(max_recv_dtos); self.count(1); self.u8(1)
        self.out(); self.out()

    def srq_post_recv(self, srq, segments, cookie):
        self.u8(60); self.h(SRQ, srq); self.u8(4); self.iov(segments); self.u64(cookie)

    def post(self, op, ep, segments, cookie):
        """op: 26 Send, 28 Recv."""
        self.u8(op); self.h(EP, ep); self.iov(segments); self.u64(cookie); self.u8(0)

    def rdma(self, op, ep, segments, cookie, rmr, offset, length):
        """op: 29 Read, 30 Write; the remote buffer is the harness memory at offset."""
        self.u8(op); self.h(EP, ep); self.iov(segments); self.u64(cookie)
        self.u8(rmr); self.u8(1); self.place(offset, length); self.u8(1); self.u8(0); self.out()

    def connect(self, ep):
        self.u8(23); self.h(EP, ep); self.u8(2); self.u8(0); self.u8(1); self.count(0); self.out()
        self.u8(0); self.u8(0)

    def wait(self, evd, threshold=1):
        self.u8(14); self.h(EVD, evd); self.u16(2000); self.count(threshold); self.out(); self.out()

    def accept(self, ep):
        self.u8(54); self.h(CR); self.h(EP, ep); self.count(0); self.out()

    def rmr_create(self):
        self.u8(41); self.h(PZ); self.out()

    def rmr_bind(self, ep, offset, length, privileges):
        self.u8(44); self.h(RMR); self.h(LMR); self.iov([(0, offset, length)]); self.u8(privileges)
        self.u8(0); self.h(EP, ep); self.u64(7); self.u8(0); self.out()

    def disconnect(self, ep, abrupt=False):
        self.u8(25); self.h(EP, ep); self.u8(1 if abrupt else 0)
        if not abrupt:
            self.u32(0)  # DAT_CLOSE_GRACEFUL_FLAG

    def free(self, op, kind, which=0):
        self.u8(op); self.h(kind, which)

    def ep_query(self, ep):
        self.u8(21); self.h(EP, ep); self.u64(0xFFFFFFFF); self.out()

    def ia_query(self):
        self.u8(2); self.h(IA); self.out(); self.u64(0xFFFFFFFF); self.out(); self.u64(0xFFFFFFFF); self.out()


# EVDs as created by setup(), counted back from the newest: cr 0, connect 1, request 2, recv 3.
CR_EVD, CONNECT_EVD, REQUEST_EVD, RECV_EVD = 0, 1, 2, 3


def setup(p, srq=False):
    """PZ, four EVDs, one LMR over the first 64 KiB, a PSP; two EPs (server older, client newer)."""
    p.pz_create()
    p.evd_create(16, EVD_DTO)                      # recv
    p.evd_create(16, EVD_DTO | EVD_RMR_BIND)       # request
    p.evd_create(8, EVD_CONNECTION)                # connect
    p.evd_create(8, EVD_CR)                        # cr
    p.lmr_create(0, 0x10000)
    p.psp_create_any(CR_EVD)
    if srq:
        p.srq_create(8)
        p.srq_post_recv(0, [(0, 0x1000, 256)], 1)
        p.ep_create(RECV_EVD, REQUEST_EVD, CONNECT_EVD, srq=0)   # server, on the SRQ
    else:
        p.ep_create(RECV_EVD, REQUEST_EVD, CONNECT_EVD)           # server
        p.post(28, 0, [(0, 0x1000, 256)], 1)
    p.ep_create(RECV_EVD, REQUEST_EVD, CONNECT_EVD)               # client: EP 0, server EP 1


def connected(p, srq=False):
    setup(p, srq)
    p.connect(0)
    p.wait(CR_EVD)
    p.accept(1)
    p.wait(CONNECT_EVD)
    p.wait(CONNECT_EVD)


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    programs = {}

    p = Program()
    p.ia_query()
    setup(p)
    p.ep_query(0)
    programs['objects'] = p

    p = Program()
    connected(p)
    p.post(26, 0, [(0, 0x2000, 64)], 2)
    p.wait(RECV_EVD)
    p.rdma(30, 0, [(0, 0x3000, 128)], 3, 0, 0x8000, 128)
    p.rdma(29, 0, [(0, 0x4000, 128)], 4, 0, 0x8000, 128)
    p.wait(REQUEST_EVD, 3)
    p.disconnect(0)
    p.wait(CONNECT_EVD)
    programs['send-write-read'] = p

    p = Program()
    connected(p, srq=True)
    p.post(26, 0, [(0, 0x2000, 64), (0, 0x2100, 64)], 2)
    p.wait(RECV_EVD)
    p.free(32, EP, 1)  # in use: refused
    p.disconnect(1, abrupt=True)
    p.wait(CONNECT_EVD)
    programs['srq-send'] = p

    p = Program()
    connected(p)
    p.rmr_create()
    p.rmr_bind(1, 0x9000, 0x100, 0x22)  # remote read and write
    p.wait(REQUEST_EVD)
    p.free(45, RMR)
    p.free(32, EP, 0)
    programs['rmr-bind'] = p

    for name, program in programs.items():
        (out / name).write_bytes(bytes(program.b))


if __name__ == '__main__':
    main()
