#!/usr/bin/env python3
"""An independent producer of the registry's topics, for the end-to-end tests.

It shares no code with the projector: it reads the Avro container files that
`projector generate` writes (fastavro), re-encodes every record in one of the
contract's two wire formats, and produces it keyed by its aggregate id
(confluent-kafka, librdkafka), so each aggregate's events stay in order.

  produce.py topics  --bootstrap H:P [--prefix P] [--partitions N] [--replication-factor R] [--extra-topic T]
  produce.py produce --bootstrap H:P --events DIR --format F [--schemas DIR]
                     [--prefix P] [--evolve] [--garbage N] [--from-index I] [--to-index J]

Formats: `single-object` (C3 01 + CRC-64-AVRO fingerprint of the schema's
Parsing Canonical Form, computed here from the specification), `confluent`
(00 + 4-byte schema id; ids are registered as files in --schemas, which
schema_registry.py serves), and `mixed` (alternating, message by message).
`--evolve` writes with a newer schema: a top-level field with a default added.
`--garbage N` adds N undecodable messages, spread over the topics.
The last stdout line is a JSON summary.
"""

import argparse
import glob
import io
import json
import os
import struct
import sys

import fastavro
from fastavro.schema import to_parsing_canonical_form
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

TOPICS = ["works", "rights", "licenses", "disputes", "certificates", "parties"]

_EMPTY = 0xC15D213AA4D7A795
_TABLE = []
for _i in range(256):
    _fp = _i
    for _ in range(8):
        _fp = (_fp >> 1) ^ (_EMPTY & -(_fp & 1))
    _TABLE.append(_fp)


def rabin(data: bytes) -> int:
    """CRC-64-AVRO, as the Avro specification defines it."""
    fp = _EMPTY
    for byte in data:
        fp = (fp >> 8) ^ _TABLE[(fp ^ byte) & 0xFF]
    return fp


def topic_names(schema_dir):
    """Record full name -> topic, from the contract's schema files."""
    names = {}
    for topic in TOPICS:
        with open(os.path.join(schema_dir, f"{topic}.avsc")) as handle:
            schema = json.load(handle)
        full = schema["name"] if "." in schema["name"] else f"{schema.get('namespace', '')}.{schema['name']}"
        names[full.lstrip(".")] = topic
    return names


def full_name(schema):
    name = schema["name"]
    return name if "." in name else f"{schema.get('namespace', '')}.{name}".lstrip(".")


def create_topics(arguments):
    admin = AdminClient({"bootstrap.servers": arguments.bootstrap})
    names = [f"{arguments.prefix}{topic}" for topic in TOPICS] + arguments.extra_topic
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=arguments.partitions, replication_factor=arguments.replication_factor) for name in names]
    )
    for name, future in futures.items():
        try:
            future.result(30)
        except Exception as error:  # An existing topic is fine; anything else is not.
            if "TOPIC_ALREADY_EXISTS" not in str(error) and "already exists" not in str(error):
                raise
    print(json.dumps({"topics": names, "partitions": arguments.partitions}))


class SchemaIds:
    """Confluent schema ids, registered as files the registry serves."""

    def __init__(self, directory):
        self.directory = directory
        os.makedirs(directory, exist_ok=True)
        self.ids = {}
        for path in glob.glob(os.path.join(directory, "*.avsc")):
            with open(path) as handle:
                self.ids[handle.read()] = int(os.path.basename(path)[:-5])

    def id_of(self, schema_text):
        if schema_text not in self.ids:
            new_id = max(self.ids.values(), default=100) + 1
            with open(os.path.join(self.directory, f"{new_id}.avsc"), "w") as handle:
                handle.write(schema_text)
            self.ids[schema_text] = new_id
            mapping = {str(number): f"{number}.avsc" for number in self.ids.values()}
            with open(os.path.join(self.directory, "ids.json"), "w") as handle:
                json.dump(mapping, handle)
        return self.ids[schema_text]


def evolve(schema):
    """The schema with a new top-level field that has a default."""
    evolved = json.loads(json.dumps(schema))
    evolved["fields"].append(
        {"name": "traceId", "type": "string", "default": "", "doc": "A newer upstream field."}
    )
    return evolved


def produce(arguments):
    repository = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    topics_of = topic_names(os.path.join(repository, "schemas", "avro"))
    schema_ids = SchemaIds(arguments.schemas) if arguments.schemas else None
    producer = Producer(
        {
            "bootstrap.servers": arguments.bootstrap,
            "enable.idempotence": True,
            "linger.ms": 20,
            "batch.num.messages": 10000,
            "queue.buffering.max.messages": 200000,
        }
    )
    failures = []

    def delivered(error, _message):
        if error is not None:
            failures.append(str(error))

    def send(topic, key, value):
        while True:
            try:
                producer.produce(topic, key=key, value=value, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)

    index = 0
    produced = 0
    by_topic = {}
    for path in sorted(glob.glob(os.path.join(arguments.events, "*.avro"))):
        with open(path, "rb") as handle:
            reader = fastavro.reader(handle, return_record_name=True)
            raw_schema = json.loads(reader.metadata["avro.schema"])
            topic = topics_of[full_name(raw_schema)]
            writer_schema = evolve(raw_schema) if arguments.evolve else raw_schema
            parsed = fastavro.parse_schema(writer_schema)
            canonical = to_parsing_canonical_form(writer_schema)
            header_single = b"\xc3\x01" + struct.pack("<Q", rabin(canonical.encode()))
            # Every writer schema is registered, whatever the format: the
            # registry serves Confluent ids, and the same files are the
            # writer schemas a consumer of single-object values is given.
            header_confluent = (
                b"\x00" + struct.pack(">I", schema_ids.id_of(json.dumps(writer_schema))) if schema_ids else None
            )
            for record in reader:
                current = index
                index += 1
                if current < arguments.from_index or (arguments.to_index is not None and current >= arguments.to_index):
                    continue
                if arguments.evolve:
                    record["traceId"] = f"trace-{current}"
                body = io.BytesIO()
                fastavro.schemaless_writer(body, parsed, record)
                use_confluent = arguments.format == "confluent" or (arguments.format == "mixed" and current % 2 == 1)
                if use_confluent and header_confluent is None:
                    sys.exit("--schemas is required for the confluent and mixed formats")
                value = (header_confluent if use_confluent else header_single) + body.getvalue()
                key = record["envelope"]["aggregateId"].encode()
                send(f"{arguments.prefix}{topic}", key, value)
                produced += 1
                by_topic[topic] = by_topic.get(topic, 0) + 1
    for number in range(arguments.garbage):
        topic = TOPICS[number % len(TOPICS)]
        send(f"{arguments.prefix}{topic}", f"garbage-{number}".encode(), b"\x7bnot avro " + str(number).encode())
    remaining = producer.flush(60)
    if remaining or failures:
        sys.exit(f"{remaining} messages not flushed; delivery failures: {failures[:3]}")
    print(json.dumps({"produced": produced, "garbage": arguments.garbage, "byTopic": by_topic, "index": index}))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    topics = commands.add_parser("topics")
    topics.add_argument("--bootstrap", required=True)
    topics.add_argument("--prefix", default="")
    topics.add_argument("--partitions", type=int, default=3)
    topics.add_argument("--replication-factor", type=int, default=1)
    topics.add_argument("--extra-topic", action="append", default=[])
    send = commands.add_parser("produce")
    send.add_argument("--bootstrap", required=True)
    send.add_argument("--events", required=True)
    send.add_argument("--format", choices=["single-object", "confluent", "mixed"], required=True)
    send.add_argument("--schemas")
    send.add_argument("--prefix", default="")
    send.add_argument("--evolve", action="store_true")
    send.add_argument("--garbage", type=int, default=0)
    send.add_argument("--from-index", type=int, default=0)
    send.add_argument("--to-index", type=int)
    arguments = parser.parse_args()
    if arguments.command == "topics":
        create_topics(arguments)
    else:
        produce(arguments)


if __name__ == "__main__":
    main()
