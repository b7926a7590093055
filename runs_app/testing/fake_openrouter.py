"""A fake OpenRouter chat-completions server on loopback, for tests and benchmarks.

It is a real HTTP server (aiohttp in a background thread with its own event loop),
so the provider's real httpx client, timeouts and connection pool are exercised.
Latency is an `asyncio.sleep`, so many slow requests are served at once.

    with FakeOpenRouter(latency=0.0) as server:
        server.enqueue(status=429, headers={"Retry-After": "1"})
        provider = OpenRouterProvider(base_url=server.base_url, api_key="test-key")
        ...
        assert server.count() == 2

Answers come, in order of precedence, from the script (`enqueue*`, consumed in
order, optionally only by requests for one model), then the `responder`, then a
deterministic default completion derived from the request.

Every 200 completion names the model that answered in `model`, as OpenRouter's do: the
asked slug, unless `serve_as(asked, served)` says another name (a dated snapshot, or a
misrouted model).

`GET /api/v1/models` serves a models list (`models=`: OpenRouter's `{"data": [...]}` shape,
see `runs_app.providers.models_list.listings_as_payload`; empty by default). Its requests
are counted apart (`models_requests`), so `count()` stays the number of completions.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import math
import random
import socket
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from aiohttp import web

DEFAULT_UPSTREAM = "FakeUpstream"
COMPLETIONS_PATH = "/api/v1/chat/completions"
MODELS_PATH = "/api/v1/models"
STARTUP_TIMEOUT = 10.0

JsonBody = dict[str, Any]


@dataclasses.dataclass(frozen=True)
class FakeResponse:
    """One answer. `body=None` means the default completion for the request; a `str`
    body is sent as-is (e.g. invalid JSON); `delay` adds to the server's latency."""

    status: int = 200
    body: JsonBody | str | None = None
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    delay: float = 0.0


@dataclasses.dataclass(frozen=True)
class LogNormalLatency:
    """A long-tailed latency: log-normal with the given median and 99th percentile (seconds),
    drawn per request from a seeded generator, so a benchmark's latencies repeat exactly."""

    median: float
    p99: float
    seed: int = 0

    @property
    def sigma(self) -> float:
        return math.log(self.p99 / self.median) / Z_99

    @property
    def mean(self) -> float:
        return self.median * math.exp(self.sigma**2 / 2)

    def sample(self, number: int) -> float:
        return random.Random(self.seed * 1_000_003 + number).lognormvariate(
            math.log(self.median), self.sigma)


Z_99 = 2.3263478740408408  # the standard normal's 99th percentile

# A responder returns content (str), a whole 200 body (dict), or a full FakeResponse.
Responder = Callable[[JsonBody], str | JsonBody | FakeResponse]


@dataclasses.dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    # The parsed JSON body, or None when the body was not JSON.
    body: Any

    @property
    def model(self) -> str | None:
        return self.body.get("model") if isinstance(self.body, dict) else None


def error_body(code: int, message: str) -> JsonBody:
    """OpenRouter's error shape, used both with an HTTP error status and inside a 200."""
    return {"error": {"code": code, "message": message}}


def completion_body(
    content: str | None,
    *,
    finish_reason: str = "stop",
    provider: str | None = DEFAULT_UPSTREAM,
    generation_id: str = "gen-fake",
    prompt_tokens: int = 10,
    completion_tokens: int | None = None,
    reasoning_tokens: int = 0,
    cost: float | None = 0.0001,
) -> JsonBody:
    """A chat completion as OpenRouter returns it; `provider=None` leaves the field out."""
    if completion_tokens is None:
        completion_tokens = len((content or "").split()) + reasoning_tokens
    usage: JsonBody = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "completion_tokens_details": {"reasoning_tokens": reasoning_tokens},
    }
    if cost is not None:
        usage["cost"] = cost
    body: JsonBody = {
        "id": generation_id,
        "object": "chat.completion",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": finish_reason,
            "native_finish_reason": finish_reason,
        }],
        "usage": usage,
    }
    if provider is not None:
        body["provider"] = provider
    return body


def default_completion(request_json: JsonBody, *, number: int) -> JsonBody:
    """A deterministic reply: the same request always gets the same text."""
    messages = request_json.get("messages") or [{}]
    last = str(messages[-1].get("content", ""))
    digest = hashlib.sha256(last.encode()).hexdigest()[:12]
    content = f"Fake reply {digest} from {request_json.get('model')}."
    if (request_json.get("response_format") or {}).get("type") == "json_object":
        content = json.dumps({"reply": content})
    prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in messages)
    completion_tokens = len(content.split())
    return completion_body(
        content,
        generation_id=f"gen-{number:06d}-{digest[:8]}",
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        cost=round((prompt_tokens + completion_tokens) * 1e-6, 8),
    )


class FakeOpenRouter:
    def __init__(
        self,
        *,
        latency: float | LogNormalLatency = 0.0,
        responder: Responder | None = None,
        api_key: str | None = None,
        keep_authorization: bool = False,
        models: JsonBody | None = None,
    ) -> None:
        self.latency = latency
        # The models list it serves (replace it between requests to change what it says).
        self.models: JsonBody = models if models is not None else {"data": []}
        self.models_requests = 0
        self.responder = responder
        # When set, requests without `Bearer <api_key>` get OpenRouter's 401.
        self.api_key = api_key
        # Recorded headers hide the Authorization value unless a test asks to see it.
        self.keep_authorization = keep_authorization
        self.base_url = ""
        self.max_in_flight = 0
        self._in_flight = 0
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._script: list[tuple[str | None, FakeResponse]] = []
        self._served: dict[str, str] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._closing: asyncio.Event | None = None
        self._startup_error: BaseException | None = None

    # -- what the server saw ---------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def count(self) -> int:
        with self._lock:
            return len(self._requests)

    @property
    def in_flight(self) -> int:
        with self._lock:
            return self._in_flight

    def reset(self) -> None:
        """Forget requests, script and the in-flight peak (reuse one server across runs)."""
        with self._lock:
            self._requests.clear()
            self._script.clear()
            self.max_in_flight = 0
            self.models_requests = 0

    # -- the script ------------------------------------------------------------------

    def serve_as(self, asked: str, served: str) -> None:
        """Name `served` as the model that answered every completion asked of `asked`."""
        with self._lock:
            self._served[asked] = served

    def _served_model(self, payload: Any) -> tuple[str | None, bool]:
        """The name a reply to `payload` gives, and whether `serve_as` chose it."""
        asked = payload.get("model") if isinstance(payload, dict) else None
        with self._lock:
            if isinstance(asked, str) and asked in self._served:
                return self._served[asked], True
        return (asked if isinstance(asked, str) else None), False

    def enqueue(
        self,
        status: int = 200,
        *,
        body: JsonBody | str | None = None,
        headers: Mapping[str, str] | None = None,
        delay: float = 0.0,
        model: str | None = None,
    ) -> None:
        """Script the next answer (for `model` only, if given). A non-200 without a body
        gets OpenRouter's error shape for that status."""
        if body is None and status != 200:
            body = error_body(status, f"Fake error {status}")
        response = FakeResponse(status=status, body=body, headers=dict(headers or {}),
                                delay=delay)
        with self._lock:
            self._script.append((model, response))

    def enqueue_error_in_200(
        self, code: int = 502, message: str = "Upstream error", *, model: str | None = None
    ) -> None:
        self.enqueue(200, body=error_body(code, message), model=model)

    def enqueue_length_finish(
        self, text: str = "A text cut off in the mid", *, model: str | None = None
    ) -> None:
        self.enqueue(200, body=completion_body(text, finish_reason="length"), model=model)

    def enqueue_empty_content(self, *, model: str | None = None) -> None:
        self.enqueue(200, body=completion_body(None), model=model)

    def enqueue_without_provider(
        self, text: str = "A reply with no upstream named", *, model: str | None = None
    ) -> None:
        self.enqueue(200, body=completion_body(text, provider=None), model=model)

    def enqueue_slow(self, delay: float, *, model: str | None = None) -> None:
        """A default success that takes `delay` seconds: longer than a client's read
        timeout, it makes that client time out."""
        self.enqueue(200, delay=delay, model=model)

    def _next_scripted(self, model: str | None) -> FakeResponse | None:
        with self._lock:
            for index, (for_model, response) in enumerate(self._script):
                if for_model is None or for_model == model:
                    del self._script[index]
                    return response
        return None

    # -- lifecycle -------------------------------------------------------------------

    def __enter__(self) -> FakeOpenRouter:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> FakeOpenRouter:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        port = listener.getsockname()[1]
        self._loop = asyncio.new_event_loop()
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._serve, args=(listener, ready), name="fake-openrouter", daemon=True
        )
        self._thread.start()
        if not ready.wait(STARTUP_TIMEOUT) or self._startup_error is not None:
            raise RuntimeError("fake OpenRouter did not start") from self._startup_error
        self.base_url = f"http://127.0.0.1:{port}/api/v1"
        return self

    def stop(self) -> None:
        if self._loop is None or self._thread is None:
            return
        shutdown = asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop)
        shutdown.result(STARTUP_TIMEOUT)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(STARTUP_TIMEOUT)
        self._loop = None
        self._thread = None

    def _serve(self, listener: socket.socket, ready: threading.Event) -> None:
        assert self._loop is not None
        loop = self._loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._start_site(listener))
        except BaseException as exc:  # reported to start(), which raises it in the caller
            self._startup_error = exc
            loop.close()
            return
        finally:
            ready.set()
        loop.run_forever()
        _cancel_leftover_tasks(loop)
        loop.close()

    async def _start_site(self, listener: socket.socket) -> None:
        app = web.Application()
        app.router.add_post(COMPLETIONS_PATH, self._handle_completion)
        app.router.add_get(MODELS_PATH, self._handle_models)
        # A short shutdown: handlers still sleeping are woken by `_closing` anyway.
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        self._closing = asyncio.Event()
        # A deep backlog so a benchmark's burst of new connections is never refused.
        await web.SockSite(self._runner, listener, backlog=1024).start()

    async def _shutdown(self) -> None:
        assert self._closing is not None and self._runner is not None
        self._closing.set()
        await self._runner.cleanup()

    # -- serving ---------------------------------------------------------------------

    async def _handle_completion(self, request: web.Request) -> web.StreamResponse:
        self._track_in_flight(+1)
        try:
            payload = await _read_json(request)
            number = self._record(request, payload)
            response = self._choose_response(request, payload, number=number)
            latency = (self.latency.sample(number) if isinstance(self.latency, LogNormalLatency)
                       else self.latency)
            await self._pause(latency + response.delay)
            return _render(response, payload, number=number,
                           served=self._served_model(payload))
        finally:
            self._track_in_flight(-1)

    async def _handle_models(self, request: web.Request) -> web.StreamResponse:
        with self._lock:
            self.models_requests += 1
        return web.Response(text=json.dumps(self.models), content_type="application/json")

    def _track_in_flight(self, change: int) -> None:
        with self._lock:
            self._in_flight += change
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _record(self, request: web.Request, payload: Any) -> int:
        headers = dict(request.headers)
        if "Authorization" in headers and not self.keep_authorization:
            scheme = headers["Authorization"].split(" ", 1)[0]
            headers["Authorization"] = f"{scheme} [redacted]"
        recorded = RecordedRequest(request.method, request.path, headers, payload)
        with self._lock:
            self._requests.append(recorded)
            return len(self._requests)

    def _choose_response(
        self, request: web.Request, payload: Any, *, number: int
    ) -> FakeResponse:
        if not isinstance(payload, dict):
            return FakeResponse(400, error_body(400, "Request body is not a JSON object"))
        if self.api_key is not None:
            if request.headers.get("Authorization") != f"Bearer {self.api_key}":
                return FakeResponse(401, error_body(401, "No auth credentials found"))
        scripted = self._next_scripted(payload.get("model"))
        if scripted is not None:
            return scripted
        if self.responder is None:
            return FakeResponse()
        return _as_response(self.responder(payload), number=number)

    async def _pause(self, seconds: float) -> None:
        # Wakes early when the server stops, so a "slower than the timeout" reply
        # never holds up the end of a test.
        if seconds <= 0 or self._closing is None:
            return
        try:
            await asyncio.wait_for(self._closing.wait(), timeout=seconds)
        except TimeoutError:
            pass


async def _read_json(request: web.Request) -> Any:
    try:
        return await request.json()
    except ValueError:
        return None


def _as_response(answer: str | JsonBody | FakeResponse, *, number: int) -> FakeResponse:
    if isinstance(answer, FakeResponse):
        return answer
    if isinstance(answer, str):
        return FakeResponse(body=completion_body(answer, generation_id=f"gen-{number:06d}"))
    return FakeResponse(body=answer)


def _render(response: FakeResponse, payload: Any, *, number: int,
            served: tuple[str | None, bool]) -> web.Response:
    body = response.body
    if body is None:
        body = default_completion(payload, number=number)
    name, chosen = served
    if isinstance(body, dict) and "choices" in body and name and (
            chosen or "model" not in body):
        body = {**body, "model": name}
    text = body if isinstance(body, str) else json.dumps(body)
    return web.Response(
        status=response.status,
        text=text,
        content_type="application/json",
        headers=dict(response.headers),
    )


def _cancel_leftover_tasks(loop: asyncio.AbstractEventLoop) -> None:
    # Closing a loop with pending tasks prints "Task was destroyed" noise into test output.
    pending = asyncio.all_tasks(loop)
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))


class FakeOpenRouterProcess:
    """The fake server in a child process, for benchmarks: a server on the measured process's
    own GIL would slow the client it measures. Same `base_url`, `count()`, `reset()`.

        with FakeOpenRouterProcess(latency=0.5) as server:
            ...  # point the provider at server.base_url
    """

    def __init__(self, *, latency: float | LogNormalLatency = 0.0,
                 responder: Responder | None = None) -> None:
        self.latency = latency
        self.responder = responder  # must be a module-level function (it is pickled)
        self.base_url = ""

    def __enter__(self) -> FakeOpenRouterProcess:
        import multiprocessing

        self._connection, child = multiprocessing.Pipe()
        self._process = multiprocessing.Process(
            target=_serve_in_child, args=(self.latency, self.responder, child), daemon=True
        )
        self._process.start()
        self.base_url = self._connection.recv()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._ask("stop")
        self._process.join(timeout=STARTUP_TIMEOUT)

    def _ask(self, command: str) -> Any:
        self._connection.send(command)
        return self._connection.recv()

    def count(self) -> int:
        return self._ask("count")

    @property
    def max_in_flight(self) -> int:
        return self._ask("max_in_flight")

    def reset(self) -> None:
        self._ask("reset")

    def cpu_seconds(self) -> float:
        """CPU time the server's process has used so far (every thread): what it costs to
        serve, to set against the calls counted."""
        return self._ask("cpu")


def _serve_in_child(latency: float | LogNormalLatency, responder: Responder | None,
                    connection: Any) -> None:
    with FakeOpenRouter(latency=latency, responder=responder) as server:
        connection.send(server.base_url)
        while True:
            command = connection.recv()
            if command == "stop":
                connection.send(None)
                return
            if command == "reset":
                server.reset()
            answers = {"count": server.count, "max_in_flight": lambda: server.max_in_flight,
                       "cpu": time.process_time}
            connection.send(answers[command]() if command in answers else None)
