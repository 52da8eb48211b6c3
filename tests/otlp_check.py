"""Validates an OTLP/HTTP JSON payload against the official opentelemetry-proto definitions.

Reads the payload on stdin; prints a JSON summary of the parsed request on stdout.
OTLP/JSON writes trace and span ids as hex (not the base64 of protobuf's standard JSON
mapping: https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding), so they are
converted first, exactly as an OTLP receiver does; everything else must parse as is, with
unknown fields rejected.
"""
import base64
import json
import sys

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

ID_FIELDS = ("traceId", "spanId", "parentSpanId")


def hex_ids_to_base64(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ID_FIELDS and isinstance(value, str):
                node[key] = base64.b64encode(bytes.fromhex(value)).decode()
            else:
                hex_ids_to_base64(value)
    elif isinstance(node, list):
        for item in node:
            hex_ids_to_base64(item)


def main():
    doc = json.load(sys.stdin)
    hex_ids_to_base64(doc)
    req = json_format.Parse(json.dumps(doc), ExportTraceServiceRequest(), ignore_unknown_fields=False)
    spans = []
    for rs in req.resource_spans:
        resource = {a.key: json_format.MessageToDict(a.value) for a in rs.resource.attributes}
        for ss in rs.scope_spans:
            for s in ss.spans:
                spans.append(
                    {
                        "name": s.name,
                        "traceId": s.trace_id.hex(),
                        "spanId": s.span_id.hex(),
                        "parentSpanId": s.parent_span_id.hex(),
                        "kind": s.kind,
                        "start": str(s.start_time_unix_nano),
                        "end": str(s.end_time_unix_nano),
                        "events": [e.name for e in s.events],
                        "attributes": {a.key: json_format.MessageToDict(a.value) for a in s.attributes},
                        "status": s.status.code,
                    }
                )
    print(json.dumps({"resource": resource, "scope": rs.scope_spans[0].scope.name, "spans": spans}))


if __name__ == "__main__":
    main()
