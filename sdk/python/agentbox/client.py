"""The AgentBox client: sandboxes, templates, the inference gateway, vectors and the admin API;
`request` reaches any route directly."""

from __future__ import annotations

import json
import time
import urllib.parse
from typing import Any, Dict, Iterator, List, Optional

from ._http import HttpClient, multipart
from .sandbox import Sandbox


def _q(value: str) -> str:
    return urllib.parse.quote(value, safe="")


class AgentBox:
    def __init__(self, api_key: Optional[str] = None, base_url: Optional[str] = None, timeout: float = 60.0,
                 max_retries: int = 3, max_retry_wait: float = 30.0) -> None:
        """api_key defaults to AGENTBOX_API_KEY, base_url to AGENTBOX_URL (else http://127.0.0.1:8080)."""
        self.http = HttpClient(api_key, base_url, timeout, max_retries, max_retry_wait)
        self.sandboxes = Sandboxes(self.http)
        self.inference = Inference(self.http)
        self.vectors = Vectors(self.http)
        self.admin = Admin(self.http)
        self.files = Files(self.http)
        self.deployments = Deployments(self.http)
        self.snapshots = Snapshots(self.http)
        self.webhooks = Webhooks(self.http)
        self.templates = Templates(self.http)

    def request(self, method: str, path: str, json_body: Any = None, query: Optional[Dict[str, Any]] = None) -> Any:
        """Any route of the API (see /openapi.json), answered as parsed JSON."""
        return self.http.call(method.upper(), path, json_body=json_body, query=query)


class Sandboxes:
    def __init__(self, http: HttpClient) -> None:
        self._http = http

    def create(self, **params: Any) -> Sandbox:
        """params: template (a built-in or one of yours, by id or name), timeout (seconds of life), env_vars, metadata, ..."""
        return Sandbox(self._http, self._http.call("POST", "/v1/agents/sandboxes", json_body=params))

    def get(self, sandbox_id: str) -> Sandbox:
        return Sandbox(self._http, self._http.call("GET", f"/v1/agents/sandboxes/{_q(sandbox_id)}"))

    def list(self, **query: Any) -> Dict[str, Any]:
        return self._http.call("GET", "/v1/agents/sandboxes", query=query)

    def kill(self, sandbox_id: str) -> Dict[str, Any]:
        return self._http.call("DELETE", f"/v1/agents/sandboxes/{_q(sandbox_id)}")


class Templates:
    """Your own templates: built from an image, build steps or a Dockerfile; a running sandbox
    becomes one with sandbox.save_as_template(name); sandboxes.create(template=...) starts from one."""

    def __init__(self, http: HttpClient) -> None:
        self._http = http

    def build(self, name: str, **body: Any) -> Dict[str, Any]:
        """body: docker_image, or template_id with build_steps, or dockerfile (with context); ...
        Answers at once with build_id and template_id."""
        return self._http.call("POST", "/v1/agents/templates/build", json_body={"name": name, **body})

    def list(self) -> List[Dict[str, Any]]:
        return self._http.call("GET", "/v1/agents/templates")["templates"]

    def get(self, template: str) -> Dict[str, Any]:
        return self._http.call("GET", f"/v1/agents/templates/{_q(template)}")

    def delete(self, template: str) -> None:
        self._http.call("DELETE", f"/v1/agents/templates/{_q(template)}")

    def status(self, build_id: str) -> Dict[str, Any]:
        return self._http.call("GET", f"/v1/agents/templates/builds/{_q(build_id)}/status")

    def logs(self, build_id: str) -> Iterator[Dict[str, Any]]:
        """The build's log lines ({n, at, line}): those so far, then each new one until the build ends."""
        for event, data in self._http.events("GET", f"/v1/agents/templates/builds/{_q(build_id)}/logs", timeout=86400):
            if event == "end":
                return
            if event == "log":
                yield json.loads(data)

    def wait_for_build(self, build_id: str, interval: float = 0.5, timeout: float = 3600) -> Dict[str, Any]:
        """Polls until the build completes or fails; its last status (a failed one says why in error)."""
        end = time.monotonic() + timeout
        while True:
            s = self.status(build_id)
            if s["status"] in ("completed", "failed"):
                return s
            if time.monotonic() > end:
                raise TimeoutError(f"template build {build_id} did not end in time")
            time.sleep(interval)


class Inference:
    def __init__(self, http: HttpClient) -> None:
        self._http = http

    def models(self) -> List[Dict[str, Any]]:
        return self._http.call("GET", "/v1/inference/models")["data"]

    def chat(self, **body: Any) -> Dict[str, Any]:
        """An OpenAI-compatible chat completion: model, messages, tools, ..."""
        return self._http.call("POST", "/v1/inference/chat/completions", json_body={**body, "stream": False})

    def chat_stream(self, **body: Any) -> Iterator[Dict[str, Any]]:
        """A streamed chat completion: yields the chunks as the model writes them."""
        for _, data in self._http.events("POST", "/v1/inference/chat/completions", json_body={**body, "stream": True}):
            if data == "[DONE]":
                return
            yield json.loads(data)

    def completions(self, **body: Any) -> Dict[str, Any]:
        """A legacy text completion: model, prompt, max_tokens, ..."""
        return self._http.call("POST", "/v1/inference/completions", json_body={**body, "stream": False})

    def embeddings(self, input: Any, model: Optional[str] = None, **extra: Any) -> Dict[str, Any]:
        body = {"input": input, **({"model": model} if model else {}), **extra}
        return self._http.call("POST", "/v1/inference/embeddings", json_body=body)

    def usage(self, **query: Any) -> Any:
        return self._http.call("GET", "/v1/inference/usage", query=query)


class Vectors:
    def __init__(self, http: HttpClient) -> None:
        self._http = http

    def create_index(self, name: str, dimension: int, metric: str = "cosine", **extra: Any) -> Dict[str, Any]:
        return self._http.call("POST", "/v1/vectors/indexes", json_body={"name": name, "dimension": dimension, "metric": metric, **extra})

    def list_indexes(self, **query: Any) -> Dict[str, Any]:
        return self._http.call("GET", "/v1/vectors/indexes", query=query)

    def delete_index(self, index_id: str) -> Dict[str, Any]:
        return self._http.call("DELETE", f"/v1/vectors/indexes/{_q(index_id)}")

    def upsert(self, index: str, vectors: List[Dict[str, Any]]) -> Dict[str, Any]:
        return self._http.call("POST", f"/v1/vectors/{_q(index)}/batch", json_body={"vectors": vectors})

    def upsert_text(self, index: str, texts: List[Dict[str, Any]]) -> Dict[str, Any]:
        """texts: [{"text", "id"?, "metadata"?, "model"?}], embedded by the gateway."""
        return self._http.call("POST", f"/v1/vectors/{_q(index)}/text/batch", json_body={"vectors": texts})

    def search(self, index: str, vector: List[float], top_k: int = 10, **extra: Any) -> Dict[str, Any]:
        return self._http.call("POST", f"/v1/vectors/{_q(index)}/search", json_body={"vector": vector, "top_k": top_k, **extra})

    def search_text(self, index: str, query: str, top_k: int = 10, **extra: Any) -> Dict[str, Any]:
        return self._http.call("POST", f"/v1/vectors/{_q(index)}/search/text", json_body={"query": query, "top_k": top_k, **extra})


class Admin:
    """The operator's admin API (construct AgentBox with the admin key)."""

    def __init__(self, http: HttpClient) -> None:
        self._http = http

    def create_key(self, name: str, **extra: Any) -> Dict[str, Any]:
        return self._http.call("POST", "/v1/admin/keys", json_body={"name": name, **extra})

    def list_keys(self, **query: Any) -> List[Dict[str, Any]]:
        return self._http.call("GET", "/v1/admin/keys", query=query)["keys"]

    def revoke_key(self, key_id: str) -> Dict[str, Any]:
        return self._http.call("DELETE", f"/v1/admin/keys/{_q(key_id)}")

    def get_tenant(self, tenant_id: str) -> Dict[str, Any]:
        return self._http.call("GET", f"/v1/admin/tenants/{_q(tenant_id)}")

    def set_tenant(self, tenant_id: str, **quotas: Any) -> Dict[str, Any]:
        return self._http.call("PUT", f"/v1/admin/tenants/{_q(tenant_id)}", json_body=quotas)


class Files:
    """Stored files (/v1/files)."""

    def __init__(self, http: HttpClient) -> None:
        self._http = http

    def upload(self, content: bytes, filename: str, purpose: str = "user_data", expires_after: Optional[int] = None) -> Dict[str, Any]:
        fields = {"purpose": purpose, **({"expires_after": str(expires_after)} if expires_after is not None else {})}
        body, ctype = multipart(fields, "file", filename, content)
        return self._http.call("POST", "/v1/files", data=body, headers={"content-type": ctype}, timeout=3600)

    def list(self, **query: Any) -> Dict[str, Any]:
        return self._http.call("GET", "/v1/files", query=query)

    def get(self, file_id: str) -> Dict[str, Any]:
        return self._http.call("GET", f"/v1/files/{_q(file_id)}")

    def content(self, file_id: str) -> bytes:
        with self._http.open("GET", f"/v1/files/{_q(file_id)}/content", timeout=3600) as res:
            return res.read()

    def delete(self, file_id: str) -> Dict[str, Any]:
        return self._http.call("DELETE", f"/v1/files/{_q(file_id)}")


class Deployments:
    def __init__(self, http: HttpClient) -> None:
        self._http = http

    def create(self, deployment_name: str, model_name: str, **extra: Any) -> Dict[str, Any]:
        body = {"deployment_name": deployment_name, "model_name": model_name, **extra}
        return self._http.call("POST", "/v1/deployments/create", json_body=body)

    def list(self) -> List[Dict[str, Any]]:
        return self._http.call("GET", "/v1/deployments/list")["deployments"]

    def get(self, deployment_id: str) -> Dict[str, Any]:
        return self._http.call("GET", f"/v1/deployments/{_q(deployment_id)}")

    def delete(self, deployment_id: str) -> Dict[str, Any]:
        return self._http.call("DELETE", f"/v1/deployments/delete/{_q(deployment_id)}")

    def accelerators(self) -> List[Dict[str, Any]]:
        return self._http.call("GET", "/v1/accelerators")["accelerators"]


class Snapshots:
    def __init__(self, http: HttpClient) -> None:
        self._http = http

    def list(self, **query: Any) -> Dict[str, Any]:
        return self._http.call("GET", "/v1/agents/snapshots", query=query)

    def delete(self, snapshot_id: str) -> Dict[str, Any]:
        return self._http.call("DELETE", f"/v1/agents/snapshots/{_q(snapshot_id)}")


class Webhooks:
    def __init__(self, http: HttpClient) -> None:
        self._http = http

    def create(self, url: str, events: List[str], secret: str) -> Dict[str, Any]:
        return self._http.call("POST", "/v1/agents/webhooks", json_body={"url": url, "events": events, "secret": secret})

    def list(self) -> List[Dict[str, Any]]:
        return self._http.call("GET", "/v1/agents/webhooks")["webhooks"]

    def delete(self, webhook_id: str) -> Dict[str, Any]:
        return self._http.call("DELETE", f"/v1/agents/webhooks/{_q(webhook_id)}")

    def deliveries(self, webhook_id: str) -> List[Dict[str, Any]]:
        return self._http.call("GET", f"/v1/agents/webhooks/{_q(webhook_id)}/deliveries")["deliveries"]
