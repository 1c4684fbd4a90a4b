#!/usr/bin/env python3
"""A tiny reader of TensorBoard event files (no TensorFlow, no tensorboard package): checks every TFRecord's
framing and both masked CRC-32C values, decodes the Event protobuf fields Halogen writes, and prints
{"file_version": ..., "scalars": {tag: [[step, value], ...]}} as JSON.

usage: read_tfevents.py EVENTS_FILE
Exit 1 (with the reason) on a bad length, a bad CRC, a truncated record or an unknown field.
"""
import json
import struct
import sys


def crc32c(data):
    # Bitwise CRC-32C (Castagnoli, reflected polynomial 0x82F63B78): slow and obviously right.
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def masked(data):
    crc = crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def varint(buf, pos):
    value, shift = 0, 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def fields(buf):
    """(field number, wire type, value) of a protobuf message; value: int, bytes, or raw fixed-width bytes."""
    pos = 0
    while pos < len(buf):
        key, pos = varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            length, pos = varint(buf, pos)
            value, pos = buf[pos:pos + length], pos + length
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"wire type {wire}")
        yield number, wire, value


def main():
    # The check value of CRC-32C (RFC 3720, B.4): guards the reference itself.
    assert crc32c(b"123456789") == 0xE3069283
    data = open(sys.argv[1], "rb").read()
    pos, out = 0, {"file_version": None, "scalars": {}, "records": 0}
    while pos < len(data):
        if pos + 12 > len(data):
            sys.exit(f"truncated record header at byte {pos}")
        header = data[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[pos + 8:pos + 12])
        if length_crc != masked(header):
            sys.exit(f"bad length CRC at byte {pos}")
        body = data[pos + 12:pos + 12 + length]
        if len(body) != length or pos + 16 + length > len(data):
            sys.exit(f"truncated record at byte {pos}")
        (body_crc,) = struct.unpack("<I", data[pos + 12 + length:pos + 16 + length])
        if body_crc != masked(body):
            sys.exit(f"bad data CRC at byte {pos}")
        pos += 16 + length
        out["records"] += 1
        step, wall_time, values = 0, None, []
        for number, wire, value in fields(body):
            if (number, wire) == (1, 1):
                (wall_time,) = struct.unpack("<d", value)
            elif (number, wire) == (2, 0):
                step = value
            elif (number, wire) == (3, 2):
                out["file_version"] = value.decode()
            elif (number, wire) == (5, 2):
                for vnum, vwire, entry in fields(value):
                    if (vnum, vwire) != (1, 2):
                        sys.exit(f"unknown Summary field {vnum}")
                    tag, simple = None, None
                    for enum, ewire, evalue in fields(entry):
                        if (enum, ewire) == (1, 2):
                            tag = evalue.decode()
                        elif (enum, ewire) == (2, 5):
                            (simple,) = struct.unpack("<f", evalue)
                        else:
                            sys.exit(f"unknown Summary.Value field {enum}")
                    values.append((tag, simple))
            else:
                sys.exit(f"unknown Event field {number} (wire type {wire})")
        if wall_time is None or wall_time < 1.5e9:
            sys.exit(f"record {out['records']}: wall_time {wall_time} is not a Unix time")
        for tag, simple in values:
            out["scalars"].setdefault(tag, []).append([step, simple])
    print(json.dumps(out))


if __name__ == "__main__":
    main()
