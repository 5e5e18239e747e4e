"""The Python SDK against a running service (AGENTBOX_URL, AGENTBOX_API_KEY, AGENTBOX_ADMIN_KEY);
run by the repository's test suite, which starts the real service first."""

import http.server
import os
import socketserver
import threading
import time
import unittest

from agentbox import AgentBox, AgentBoxError


class SandboxTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ab = AgentBox()
        cls.sbx = cls.ab.sandboxes.create(metadata={"purpose": "sdk-python"})

    @classmethod
    def tearDownClass(cls):
        cls.sbx.kill()

    def test_runs_keep_state_and_report_errors(self):
        self.assertIsNone(self.sbx.run_code("x = 20").error)
        r = self.sbx.run_code("print('hi')\nx + 22")
        self.assertEqual((r.stdout, r.text), ("hi\n", "42"))
        self.assertIn("ZeroDivisionError", self.sbx.run_code("1/0").error)
        self.assertEqual(self.sbx.run_code("console.log(6 * 7)", language="javascript").stdout, "42\n")

    def test_streamed_run(self):
        events = list(self.sbx.run_code("import time\nfor i in range(3):\n    print(i, flush=True)\n    time.sleep(0.05)", stream=True))
        self.assertEqual("".join(e.text for e in events if e.type == "stdout"), "0\n1\n2\n")
        self.assertEqual(events[-1].type, "end")
        self.assertIsNone(events[-1].result.error)

    def test_files(self):
        self.sbx.files.write("py/notes.txt", "héllo")
        self.assertEqual(self.sbx.files.read("/home/user/py/notes.txt"), "héllo")
        blob = bytes((i * 7) % 256 for i in range(200_000))
        self.sbx.files.upload("/home/user/py/blob.bin", blob)
        self.assertEqual(self.sbx.files.download("/home/user/py/blob.bin"), blob)
        self.assertEqual([f["name"] for f in self.sbx.files.list("py")], ["blob.bin", "notes.txt"])
        self.sbx.files.remove("py")
        with self.assertRaises(AgentBoxError) as cm:
            self.sbx.files.read("py/notes.txt")
        self.assertEqual((cm.exception.status, cm.exception.code), (404, "file_not_found"))

    def test_commands(self):
        r = self.sbx.commands.run("echo out; echo err >&2; exit 3")
        self.assertEqual((r["stdout"], r["stderr"], r["exit_code"]), ("out\n", "err\n", 3))
        chunks = [e.text for e in self.sbx.commands.run("for i in 1 2; do echo $i; sleep 0.05; done", stream=True) if e.type == "stdout"]
        self.assertEqual("".join(chunks), "1\n2\n")
        bg = self.sbx.commands.start("sleep 30")
        self.assertTrue(any(c["pid"] == bg["pid"] and c["status"] == "running" for c in self.sbx.commands.list()))
        self.sbx.commands.kill(bg["pid"])

    def test_errors_carry_the_envelope(self):
        with self.assertRaises(AgentBoxError) as cm:
            self.ab.sandboxes.get("no-such-sandbox")
        self.assertEqual((cm.exception.status, cm.exception.code), (404, "sandbox_not_found"))
        self.assertTrue(cm.exception.request_id)
        with self.assertRaises(AgentBoxError) as cm:
            AgentBox(api_key="abx_wrong").sandboxes.list()
        self.assertEqual((cm.exception.status, cm.exception.code), (401, "unauthorized"))
        with self.assertRaises(AgentBoxError) as cm:
            self.sbx.run_code("1", language="cobol")
        self.assertEqual(cm.exception.code, "invalid_request")

    def test_any_route(self):
        self.assertEqual(self.ab.request("GET", f"/v1/agents/sandboxes/{self.sbx.id}")["sandbox_id"], self.sbx.id)


class PlatformTest(unittest.TestCase):
    def test_files_pause_snapshots_fork_events_network_ports(self):
        ab = AgentBox()
        stored = ab.files.upload(b"a,b\n1,2\n", "data.csv", purpose="user_data")
        self.assertEqual(ab.files.content(stored["id"]), b"a,b\n1,2\n")
        sbx = ab.sandboxes.create()
        try:
            sbx.files.import_file(stored["id"], "/home/user/data.csv")
            self.assertEqual(sbx.files.read("data.csv"), "a,b\n1,2\n")
            sbx.files.write("out.txt", "result")
            exported = sbx.files.export_file("out.txt")
            self.assertEqual(ab.files.content(exported["id"]), b"result")
            ab.files.delete(stored["id"])
            ab.files.delete(exported["id"])
            with self.assertRaises(AgentBoxError) as cm:
                ab.files.get(stored["id"])
            self.assertEqual(cm.exception.status, 404)

            sbx.run_code("y = 7")
            self.assertEqual(sbx.pause()["status"], "paused")
            self.assertEqual(sbx.resume()["status"], "running")
            self.assertEqual(sbx.run_code("y").text, "7")
            snap = sbx.snapshot()
            restored = ab.sandboxes.create(snapshot_id=snap["snapshot_id"])
            self.assertEqual(restored.files.read("out.txt"), "result")
            forks = sbx.fork(2)
            self.assertEqual(len(forks), 2)
            for s in [restored, *forks]:
                s.kill()
            ab.snapshots.delete(snap["snapshot_id"])

            types = [e["type"] for e in sbx.events()]
            self.assertTrue({"created", "paused", "resumed"} <= set(types), types)
            self.assertFalse(sbx.network.get()["internet_access"])
            self.assertIn("8000", sbx.host_url(8000))
            self.assertGreaterEqual(len(ab.deployments.accelerators()), 1)
        finally:
            sbx.kill()


class RetryTest(unittest.TestCase):
    def test_a_429_is_retried_after_retry_after(self):
        admin = AgentBox(api_key=os.environ["AGENTBOX_ADMIN_KEY"])
        created = admin.admin.create_key("py-one-at-a-time", max_concurrent_runs=1)
        try:
            ab = AgentBox(api_key=created["key"])
            sbx = ab.sandboxes.create()
            slow = threading.Thread(target=lambda: sbx.run_code("import time; time.sleep(1.5)"))
            slow.start()
            time.sleep(0.3)
            with self.assertRaises(AgentBoxError) as cm:
                AgentBox(api_key=created["key"], max_retries=0).sandboxes.get(sbx.id).run_code("1")
            self.assertEqual((cm.exception.status, cm.exception.code), (429, "rate_limited"))
            self.assertIsNotNone(cm.exception.retry_after)
            self.assertEqual(sbx.run_code("'second'").text, "'second'")  # waited, retried, served
            slow.join()
            sbx.kill()
        finally:
            admin.admin.revoke_key(created["id"])


class TimeoutTest(unittest.TestCase):
    def test_a_silent_service_is_a_timeout(self):
        class Silent(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                time.sleep(3)

        with socketserver.TCPServer(("127.0.0.1", 0), Silent) as srv:
            threading.Thread(target=srv.handle_request, daemon=True).start()
            ab = AgentBox(api_key="k", base_url=f"http://127.0.0.1:{srv.server_address[1]}", timeout=0.3, max_retries=0)
            with self.assertRaises(AgentBoxError) as cm:
                ab.sandboxes.list()
            self.assertEqual((cm.exception.status, cm.exception.code), (0, "timeout"))



class TemplateTest(unittest.TestCase):
    def test_a_sandbox_saved_as_a_template(self):
        ab = AgentBox()
        source = ab.sandboxes.create()
        try:
            source.files.write("prepared.txt", "from the source")
            saved = ab.templates.get(source.save_as_template("py-saved", description="saved by the SDK")["id"])
            self.assertEqual((saved["status"], saved["description"]), ("ready", "saved by the SDK"))
            self.assertIn(saved["id"], [t["id"] for t in ab.templates.list()])
            copy = ab.sandboxes.create(template="py-saved")
            self.assertEqual(copy.files.read("prepared.txt"), "from the source")
            copy.kill()
        finally:
            source.kill()
        ab.templates.delete("py-saved")
        with self.assertRaises(AgentBoxError) as cm:
            ab.templates.get("py-saved")
        self.assertEqual(cm.exception.code, "template_not_found")

if __name__ == "__main__":
    unittest.main()
