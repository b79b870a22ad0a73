"""A local HTTP server that speaks the Anthropic Messages API (POST /v1/messages), so the real
`anthropic` client can be tested offline. Replies come from a script, or from a default that
answers the seed's summary prompts with a valid JSON summary. A request that forces a tool gets
the reply as that tool's input when it is a JSON object (as Claude answers), else as text. A
request can also be held without a reply, the way a stalled API call hangs."""
from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HANG_SECONDS = 60.0


class FakeAnthropic:
    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.script: list = []  # each item: reply text, or (status, error message)
        self.respond: Callable[[str], str] | None = None  # the reply to a prompt once the script is used up
        self.hang: Callable[[str], bool] | None = None  # prompts that get no reply for HANG_SECONDS
        self.held = 0  # requests held so far
        self.holding = 0  # requests held right now
        self.hung = threading.Event()  # set when the first request is held
        self._release = threading.Event()
        self._lock = threading.Lock()
        handler = self._handler()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "FakeAnthropic":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._release.set()
        self.server.shutdown()
        self.server.server_close()

    @staticmethod
    def default_reply(prompt: str) -> str:
        body = json.loads(prompt[: prompt.rindex("}") + 1])
        data = body["input_data"]
        source = data.get("text") or " / ".join(data.get("child_summaries", []))
        reply = {"summary": "CLAUDE: " + " ".join(source.split())[:150]}
        if "title" in body.get("output_format", {}).get("json_structure", {}):
            reply["title"] = "CLAUDE TITLE: " + " ".join(source.split()[:4])
        return json.dumps(reply, ensure_ascii=False)

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("content-length", 0))
                request = json.loads(self.rfile.read(length))
                if self.path != "/v1/messages" or not (self.headers.get("x-api-key") or self.headers.get("authorization")):
                    return self._send(404 if self.path != "/v1/messages" else 401,
                                      {"type": "error", "error": {"type": "not_found_error", "message": "no"}})
                fake.requests.append(request)
                prompt = request["messages"][-1]["content"]
                if fake.hang and fake.hang(prompt):
                    return self._hold()
                item = fake.script.pop(0) if fake.script else (fake.respond or fake.default_reply)(prompt)
                if isinstance(item, tuple):
                    status, message = item
                    return self._send(status, {"type": "error", "error": {"type": "api_error", "message": message}})
                content, stop = [{"type": "text", "text": item}], "end_turn"
                forced = (request.get("tool_choice") or {}).get("name")
                if forced:  # Claude made to call a tool answers with its input (an object it wrote)
                    try:
                        arguments = json.loads(item)
                    except ValueError:
                        arguments = None
                    if isinstance(arguments, dict):
                        content = [{"type": "tool_use", "id": f"toolu_{len(fake.requests)}", "name": forced,
                                    "input": arguments}]
                        stop = "tool_use"
                self._send(200, {
                    "id": f"msg_{len(fake.requests)}", "type": "message", "role": "assistant",
                    "model": request["model"], "content": content, "stop_reason": stop, "stop_sequence": None,
                    "usage": {"input_tokens": len(prompt) // 4, "output_tokens": len(item) // 4}})

            def _hold(self):
                """No reply for HANG_SECONDS, or until the client gives up and closes the connection
                (its timeout) or the fake closes. `holding` counts the requests a client still waits on."""
                with fake._lock:
                    fake.held += 1
                    fake.holding += 1
                fake.hung.set()
                deadline = time.monotonic() + HANG_SECONDS
                try:
                    while not fake._release.is_set() and time.monotonic() < deadline:
                        readable, _, _ = select.select([self.connection], [], [], 0.05)
                        if readable and not self.connection.recv(1, socket.MSG_PEEK):
                            break
                finally:
                    with fake._lock:
                        fake.holding -= 1

            def _send(self, status, payload):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler
