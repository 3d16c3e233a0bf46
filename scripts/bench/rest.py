"""The benchmarks' REST client: one signed-in session (its cookie kept), JSON in and out."""

import http.cookiejar
import json
import urllib.request


class Api:
    def __init__(self, base: str) -> None:
        self.base = base
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))

    def call(self, method: str, path: str, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        with self.opener.open(request, timeout=60) as answer:
            text = answer.read()
            return json.loads(text) if text else None

    def post(self, path: str, body):
        return self.call("POST", path, body)
