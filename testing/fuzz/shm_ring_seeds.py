#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""Writes the seeds of the shm_ring fuzz target (corpus/shm_ring/): a hostile peer's scripts that
reach each path of a shared-memory connection well-formed (Sends through the ring and pulled,
one-sided and ring RDMA, a Send held for a buffer, the peer's close) and a few that are not (a
lying consumed count, garbage). The format is shm_ring_fuzzer.cc's: a setup byte, a ring-size
byte, then actions.

usage: testing/fuzz/shm_ring_seeds.py [DIR]   (default: testing/fuzz/corpus/shm_ring)
"""
import os
import struct
import sys

RAW, RECORD, PULL, CONSUMED, CONTROL, ENTRY, SOCKET, POLL, BUFFER, POST, EOF, SLEEP = range(12)
PASSIVE, ATTACH, PEER_PULLS, POST_SEND, POST_WRITE, POST_READ, NO_BUFFERS = 1, 2, 4, 8, 16, 32, 64
SEND, PULL_OP, WRITE, READ_REQUEST, READ_RESPONSE = 2, 3, 4, 5, 6
LAST, SOLICITED, INVALIDATE = 1, 2, 4
REGION = 0xA5A5 << 48  # an address in the target's exposed region
REGION_KEY = (1 << 8) | 1


def record(opcode, flags, msn, total, offset, payload=b"", key=0, segments=0):
    return struct.pack("<BBBHIIIQH", RECORD, opcode, flags, segments, msn, key, total, offset, len(payload)) + payload


def pull(msn, pieces, flags=LAST):
    out = struct.pack("<BIBB", PULL, msn, flags, len(pieces))
    for address, length in pieces:
        out += struct.pack("<QI", address, length)
    return out


def entry(slot, key, address, length, access, pz=1, endpoint=0, sequence=0):
    return struct.pack("<BBIIQQIIQ8x", ENTRY, slot, sequence, key, address, length, access, pz, endpoint)


def close(reason, detail=0):
    message = struct.pack("<IHHBI", 0x48534453, 1, 5, reason, detail)
    return struct.pack("<BB", SOCKET, len(message)) + message


def poll(rounds=8):
    return struct.pack("<BB", POLL, rounds)


def post(kind, length):
    return struct.pack("<BBH", POST, kind, length)


SEEDS = {
    "send-8": bytes([0, 0]) + record(SEND, LAST, 1, 8, 0, b"12345678") + poll(),
    "send-two-records": bytes([PASSIVE, 1]) + record(SEND, 0, 1, 100, 0, b"a" * 50)
    + record(SEND, LAST | SOLICITED, 1, 100, 50, b"b" * 50) + poll(),
    "send-invalidate": bytes([0, 0]) + record(SEND, LAST | INVALIDATE, 1, 4, 0, b"abcd", key=0x4711) + poll(),
    "pull": bytes([ATTACH, 2]) + pull(1, [(REGION | 0x100, 60), (REGION | 0x2000, 4)])
    + pull(2, [(REGION | 0x100, 1000), (REGION | 0x2000, 15000)]) + poll(),
    "pull-refused": bytes([0, 0]) + pull(1, [(REGION, 64)]) + poll()
    + record(SEND, LAST, 1, 64, 0, b"r" * 64) + poll(),
    "one-sided": bytes([ATTACH, 0])
    + entry(1, REGION_KEY, REGION, 65536, 3) + poll() + post(1, 1000) + post(2, 1000) + poll(),
    "one-sided-refused": bytes([ATTACH | POST_WRITE, 0]) + entry(1, REGION_KEY, REGION, 16, 3) + poll(),
    "ring-rdma": bytes([PASSIVE, 1]) + record(WRITE, LAST, 0, 16, REGION | 100, b"w" * 16, key=REGION_KEY)
    + record(READ_REQUEST, LAST, 1, 100, REGION | 100, key=REGION_KEY) + poll(16),
    "read-response": bytes([POST_READ, 2]) + poll() + record(READ_RESPONSE, LAST, 1, 3000, 0, b"x" * 3000) + poll(),
    "held-then-buffer": bytes([NO_BUFFERS, 0]) + record(SEND, LAST, 1, 8, 0, b"held....") + poll()
    + struct.pack("<BH", BUFFER, 100) + poll(),
    "peer-closes": bytes([POST_SEND | PEER_PULLS, 0]) + poll() + close(1) + struct.pack("<B", EOF) + poll(),
    "peer-terminates": bytes([POST_READ, 0]) + poll() + close(3, 0x102) + poll(),
    "consumed-lies": bytes([0, 0]) + post(0, 3000) * 3 + struct.pack("<BQ", CONSUMED, 1 << 40) + poll(),
    "sleeping-peer": bytes([0, 0]) + struct.pack("<BQ", SLEEP, 3) + post(0, 8) + poll(),
    "garbage": bytes([0, 0]) + struct.pack("<BHB", RAW, 0, 32) + bytes(range(1, 33)) + poll(),
    "access-held": bytes([0, 0]) + struct.pack("<BBQ", CONTROL, 0, 1) + close(2) + poll(),
}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "corpus", "shm_ring")
    os.makedirs(out, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    print(f"{len(SEEDS)} seeds in {out}")


if __name__ == "__main__":
    main()
