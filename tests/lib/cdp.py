"""cdp.py - a headless Chromium driven through the Chrome DevTools Protocol
over a pipe (--remote-debugging-pipe: requests on fd 3, replies on fd 4,
each a JSON message ended by a NUL byte), with nothing but the standard
library: no websocket client, no webdriver.

    with Browser() as b:             # None of chromium: Browser.find() is None
        page = b.open('file:///tmp/r.html', width=1400, height=1000)
        page.eval('1 + 1')            # -> 2
        page.mouse('mouseMoved', x, y)
        page.screenshot('shot.png')
        page.errors                   # console errors and uncaught exceptions

Every call waits for its reply; events that arrive meanwhile are kept
(console messages, exceptions).  Timeouts raise TimeoutError.
"""
import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time


class Browser:
    @staticmethod
    def find():
        for name in ('chromium', 'chromium-browser', 'google-chrome'):
            path = shutil.which(name)
            if path:
                return path
        return None

    def __init__(self, exe=None, timeout=60):
        self.exe = exe or Browser.find()
        if not self.exe:
            raise FileNotFoundError('no chromium')
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix='stprof-cdp-')
        to_chrome_r, self._w = os.pipe()
        self._r, from_chrome_w = os.pipe()

        def fds():
            a, b = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.log = open(os.path.join(self.profile, 'chromium.log'), 'w')
        self.proc = subprocess.Popen(
            [self.exe, '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
             '--disable-extensions', '--remote-debugging-pipe', '--user-data-dir=' + self.profile,
             'about:blank'],
            pass_fds=(3, 4), preexec_fn=fds, stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buf = b''
        self._id = 0
        self.events = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _send(self, method, params=None, session=None):
        self._id += 1
        msg = {'id': self._id, 'method': method, 'params': params or {}}
        if session:
            msg['sessionId'] = session
        data = json.dumps(msg).encode() + b'\0'
        while data:
            n = os.write(self._w, data)
            data = data[n:]
        return self._id

    def _recv(self, deadline):
        while b'\0' not in self._buf:
            left = deadline - time.time()
            if left <= 0:
                raise TimeoutError('no reply from chromium')
            ready, _, _ = select.select([self._r], [], [], left)
            if ready:
                chunk = os.read(self._r, 1 << 20)
                if not chunk:
                    raise EOFError('chromium closed the pipe (see %s)' % self.log.name)
                self._buf += chunk
        msg, _, self._buf = self._buf.partition(b'\0')
        return json.loads(msg)

    def call(self, method, params=None, session=None, timeout=None):
        i = self._send(method, params, session)
        deadline = time.time() + (timeout or self.timeout)
        while True:
            m = self._recv(deadline)
            if m.get('id') == i:
                if 'error' in m:
                    raise RuntimeError('%s: %s' % (method, m['error']))
                return m.get('result', {})
            self.events.append(m)

    def pump(self, seconds):
        """Collects events for a while."""
        deadline = time.time() + seconds
        try:
            while True:
                self.events.append(self._recv(deadline))
        except TimeoutError:
            pass

    def open(self, url, width=1400, height=1000):
        target = self.call('Target.createTarget', {'url': 'about:blank'})['targetId']
        session = self.call('Target.attachToTarget', {'targetId': target, 'flatten': True})['sessionId']
        page = Page(self, session)
        for domain in ('Runtime', 'Page', 'Log'):
            self.call(domain + '.enable', None, session)
        self.call('Emulation.setDeviceMetricsOverride',
                  {'width': width, 'height': height, 'deviceScaleFactor': 1, 'mobile': False}, session)
        self.call('Page.navigate', {'url': url}, session)
        page.wait('document.readyState === "complete"')
        return page

    def close(self):
        try:
            self._send('Browser.close')
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._r, self._w):
            try:
                os.close(fd)
            except OSError:
                pass
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)


class Page:
    def __init__(self, browser, session):
        self.b = browser
        self.session = session

    def call(self, method, params=None, timeout=None):
        return self.b.call(method, params, self.session, timeout)

    def eval(self, expr, timeout=None):
        r = self.call('Runtime.evaluate', {'expression': expr, 'returnByValue': True, 'awaitPromise': True},
                      timeout)
        if 'exceptionDetails' in r:
            raise RuntimeError('%s: %s' % (expr, r['exceptionDetails'].get('exception', {}).get(
                'description', r['exceptionDetails'].get('text'))))
        return r['result'].get('value')

    def wait(self, expr, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.eval(expr):
                return
            time.sleep(0.05)
        raise TimeoutError('waited %ss for %s' % (timeout, expr))

    def mouse(self, kind, x, y, button='none', clicks=0, modifiers=0, delta_y=0):
        params = {'type': kind, 'x': x, 'y': y, 'button': button, 'clickCount': clicks, 'modifiers': modifiers}
        if kind == 'mouseWheel':
            params.update({'deltaX': 0, 'deltaY': delta_y})
        self.call('Input.dispatchMouseEvent', params)

    def click(self, x, y):
        self.mouse('mouseMoved', x, y)
        self.mouse('mousePressed', x, y, 'left', 1)
        self.mouse('mouseReleased', x, y, 'left', 1)

    def screenshot(self, path):
        data = self.call('Page.captureScreenshot', {'format': 'png', 'captureBeyondViewport': True})['data']
        with open(path, 'wb') as f:
            f.write(base64.b64decode(data))

    @property
    def errors(self):
        """Console errors and warnings, uncaught exceptions, error log entries."""
        out = []
        for m in self.b.events:
            if m.get('sessionId') != self.session:
                continue
            p = m.get('params', {})
            if m.get('method') == 'Runtime.exceptionThrown':
                d = p.get('exceptionDetails', {})
                out.append('exception: ' + d.get('exception', {}).get('description', d.get('text', '?')))
            elif m.get('method') == 'Runtime.consoleAPICalled' and p.get('type') in ('error', 'warning', 'assert'):
                out.append('console.%s: %s' % (p['type'], ' '.join(str(a.get('value', a.get('description')))
                                                                   for a in p.get('args', []))))
            elif m.get('method') == 'Log.entryAdded' and p.get('entry', {}).get('level') == 'error':
                out.append('log: ' + p['entry'].get('text', '?'))
        return out
