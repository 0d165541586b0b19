"""Tests of tributary_client against a real `tributary serve`.

Run from the repository root:
    PYTHONPATH=gen/python:client/python python3 -m unittest discover -s client/python
TRIBUTARY_BIN names the binary (make python-test sets it to bin/tributary);
without it the tests build one with `go build`. Anything missing fails.
"""

import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import grpc

from tributary.v1 import objects_pb2, translation_pb2
import tributary_client as tc

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
NAME = "extension/auth/ext-authz"



def config_dump_resources(dump):
    """The Clusters and ClusterLoadAssignments of an admin ConfigDump in
    protojson, without the @type each carries as an Any."""
    def bare(resource):
        return {k: v for k, v in resource.items() if k != "@type"}
    clusters, assignments = [], []
    for section in dump["configs"]:
        if section["@type"].endswith(".ClustersConfigDump"):
            clusters = [bare(c["cluster"]) for c in section.get("dynamicActiveClusters", [])]
        elif section["@type"].endswith(".EndpointsConfigDump"):
            assignments = [bare(e["endpointConfig"]) for e in section.get("dynamicEndpointConfigs", [])]
    return clusters, assignments

class Server:
    """A `tributary serve --address 127.0.0.1:0`, its address read from its
    first log line."""

    def __init__(self):
        self._tmp = None
        binary = os.environ.get("TRIBUTARY_BIN")
        if binary:
            if not os.path.exists(binary):
                raise RuntimeError(f"TRIBUTARY_BIN={binary} does not exist: run 'make build' first")
        else:
            self._tmp = tempfile.mkdtemp(prefix="tributary-python-test-")
            binary = os.path.join(self._tmp, "tributary")
            subprocess.run(["go", "build", "-o", binary, "./cmd/tributary"], cwd=REPO_ROOT, check=True)
        self.binary = binary
        self._proc = subprocess.Popen([binary, "serve", "--address", "127.0.0.1:0"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        first = self._proc.stderr.readline()
        m = re.search(r'msg="serving gRPC" address=(\S+)', first)
        if not m:
            self.stop()
            raise RuntimeError(f"tributary serve did not start: {first!r}")
        self.address = m.group(1)

    def stop(self):
        self._proc.terminate()
        self._proc.communicate(timeout=60)
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)


def example_request():
    with open(os.path.join(REPO_ROOT, "examples", "grpc", "translate-request.json")) as f:
        return tc.request_from_json(f.read())


def localities(cla):
    return [
        (l["locality"]["subZone"], l["loadBalancingWeight"],
         [e["endpoint"]["address"]["socketAddress"]["address"] for e in l["lbEndpoints"]])
        for l in cla.json["endpoints"]
    ]


class TributaryClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server()
        cls.client = tc.TributaryClient(cls.server.address)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.server.stop()

    def test_translate_examples(self):
        got = self.client.translate(example_request())
        self.assertEqual([(r.name, r.type) for r in got.clusters], [(NAME, tc.CLUSTER_TYPE)])
        self.assertEqual([(r.name, r.type) for r in got.cluster_load_assignments],
                         [(NAME, tc.CLUSTER_LOAD_ASSIGNMENT_TYPE)])
        for r in got.clusters + got.cluster_load_assignments:
            self.assertRegex(r.version, r"^[0-9a-f]{16}$")
        self.assertEqual(localities(got.cluster_load_assignments[0]), [
            ("auth/authz-stable/9001", 80, ["10.244.1.17", "10.244.2.9", "10.244.3.21"]),
            ("auth/authz-canary/9001", 20, ["10.244.2.30"]),
        ])
        # The JSON equals what the command line prints for the same objects.
        cli = json.loads(subprocess.run(
            [self.server.binary, "translate", "-f", "examples/extauth.yaml", "-o", "json"],
            cwd=REPO_ROOT, check=True, capture_output=True, text=True).stdout)
        # It prints an Envoy ConfigDump: each resource wrapped with its
        # version, and its @type inline.
        clusters, assignments = config_dump_resources(cli["configDump"])
        self.assertEqual([r.json for r in got.clusters], clusters)
        self.assertEqual([r.json for r in got.cluster_load_assignments], assignments)
        self.assertEqual([(s.name, s.conditions[0].status, s.response_timeout) for s in got.statuses],
                         [("ext-authz", "True", "500ms")])

    def test_translate_without_json_has_the_same_bytes(self):
        plain = tc.TributaryClient(self.server.address, include_json=False)
        try:
            without = plain.translate(example_request())
        finally:
            plain.close()
        with_json = self.client.translate(example_request())
        self.assertEqual(len(without.clusters + without.cluster_load_assignments), 2)
        self.assertEqual(len(with_json.clusters + with_json.cluster_load_assignments), 2)
        for a, b in zip(without.clusters + without.cluster_load_assignments,
                        with_json.clusters + with_json.cluster_load_assignments):
            self.assertIsNone(a.json)
            self.assertEqual((a.name, a.version, a.bytes), (b.name, b.version, b.bytes))

    def test_malformed_request(self):
        req = translation_pb2.TranslateRequest(objects=[
            objects_pb2.KubernetesObject(service=objects_pb2.Service(
                metadata=objects_pb2.ObjectMeta(namespace="auth"))),
        ])
        with self.assertRaises(grpc.RpcError) as caught:
            self.client.translate(req)
        err = caught.exception
        self.assertEqual(err.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(err.details(), "objects[0] (Service): metadata.name is required")
        self.assertEqual(tc.field_violations(err), [tc.FieldViolation(
            field="objects[0].service.metadata.name", reason="REQUIRED",
            description="objects[0] (Service): metadata.name is required")])

    def test_sync(self):
        request = example_request()
        objects = {}
        for o in request.objects:
            r = tc.reference_to(o)
            objects[(r.kind, r.namespace, r.name)] = o

        def translate_current():
            return self.client.translate(translation_pb2.TranslateRequest(
                settings=request.settings, objects=list(objects.values())))

        session = self.client.sync(request.settings)

        self.assertEqual(session.send(upserts=objects.values()), 1)
        first = session.next()
        self.assertIsInstance(first, tc.SyncDelta)
        self.assertEqual((first.batch_id, first.full_state), (1, True))
        self.assertEqual(session.state.to_translation(), translate_current())

        # An endpoint change: the stable pod that was not ready becomes ready.
        slice_obj = next(o for o in request.objects
                         if o.WhichOneof("kind") == "endpoint_slice"
                         and o.endpoint_slice.metadata.name == "authz-stable-7x2kq")
        changed = objects_pb2.KubernetesObject()
        changed.CopyFrom(slice_obj)
        for e in changed.endpoint_slice.endpoints:
            e.conditions.ready = True
        r = tc.reference_to(changed)
        objects[(r.kind, r.namespace, r.name)] = changed
        self.assertEqual(session.send(upserts=[changed]), 2)
        second = session.next()
        self.assertEqual((second.batch_id, second.full_state), (2, False))
        self.assertEqual(second.clusters, [])
        self.assertEqual(localities(second.cluster_load_assignments[0])[0],
                         ("auth/authz-stable/9001", 80, ["10.244.1.17", "10.244.2.9", "10.244.3.21", "10.244.3.22"]))
        self.assertEqual(session.state.to_translation(), translate_current())

        # A malformed batch is refused and changes nothing.
        bad = objects_pb2.KubernetesObject(service=objects_pb2.Service(metadata=objects_pb2.ObjectMeta(namespace="auth")))
        self.assertEqual(session.send(upserts=[bad]), 3)
        third = session.next()
        self.assertIsInstance(third, tc.SyncRejected)
        self.assertEqual(third.batch_id, 3)
        self.assertEqual([(v.field, v.reason) for v in third.violations],
                         [("batch.upserts[0].service.metadata.name", "REQUIRED")])
        self.assertEqual(session.state.version, second.version)

        # Deleting the ExtensionService removes its resources and status.
        ext = next(o for o in request.objects if o.WhichOneof("kind") == "extension_service")
        ref = tc.reference_to(ext)
        del objects[(ref.kind, ref.namespace, ref.name)]
        self.assertEqual(session.send(deletes=[ref]), 4)
        fourth = session.next()
        self.assertEqual((fourth.batch_id, fourth.removed_clusters, fourth.removed_cluster_load_assignments),
                         (4, [NAME], [NAME]))
        self.assertEqual([(s.namespace, s.name) for s in fourth.removed_statuses], [("auth", "ext-authz")])
        self.assertEqual(session.state.to_translation(), translate_current())

        session.close()
        self.assertIsNone(session.next())


if __name__ == "__main__":
    unittest.main()
