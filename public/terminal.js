// <paddock-terminal>: a shell in a running environment, in the page. The dashboard (Leptos) only creates
// the element, after a click; this file does the rest: it loads xterm.js and its fit addon from the site's
// own assets (/vendor/xterm/, copied from npm by scripts/setup.sh; no CDN) the first time a terminal
// opens, and bridges the terminal to the server's WebSocket:
//   browser -> server  text frames {"input": "..."} (keystrokes) and {"resize": [rows, cols]}
//   server -> browser  binary frames (terminal output) and a last text frame {"exit": code}
// Attributes: data-path (the WebSocket path; ws: or wss: follows the page), data-text-connecting,
// data-text-exited ("@code" is replaced by the exit code), data-text-closed, data-text-failed (the
// dashboard passes them translated). The element reports data-state: connecting, open, exited, closed or
// failed. Removing the element closes the socket, which ends the shell. Copy and paste follow desktop
// terminals (see `clipboardKey`).
(() => {
  'use strict';

  const VENDOR = '/vendor/xterm/';
  let library = null;

  function loadScript(src) {
    return new Promise((resolve, reject) => {
      const script = document.createElement('script');
      script.src = src;
      script.onload = resolve;
      script.onerror = () => reject(new Error(`cannot load ${src}`));
      document.head.appendChild(script);
    });
  }

  /** xterm.js once per page, CSS first so the first fit measures real cells. */
  function loadXterm() {
    if (!library) {
      const css = document.createElement('link');
      css.rel = 'stylesheet';
      css.href = `${VENDOR}xterm.css`;
      document.head.appendChild(css);
      library = loadScript(`${VENDOR}xterm.js`).then(() => loadScript(`${VENDOR}addon-fit.js`));
    }
    return library;
  }

  /** Ctrl+C (or ⌘C) with text selected, and Ctrl+Shift+C. */
  function isCopy(event) {
    return (event.ctrlKey || event.metaKey) && event.key.toLowerCase() === 'c';
  }

  /** Ctrl+V (or ⌘V), and Ctrl+Shift+V. */
  function isPaste(event) {
    return (event.ctrlKey || event.metaKey) && !event.altKey && event.key.toLowerCase() === 'v';
  }

  class PaddockTerminal extends HTMLElement {
    /** Copy and paste as a desktop terminal does: Ctrl+C copies when text is selected (and is the
     *  interrupt otherwise), Ctrl+Shift+C always copies, Ctrl+V and Ctrl+Shift+V paste (as typed
     *  input, bracketed when the shell asked for it). Returns false for a key it handled. */
    clipboardKey(event) {
      if (event.type !== 'keydown') return true;
      const term = this.term;
      if (isCopy(event) && (event.shiftKey || term.hasSelection())) {
        event.preventDefault();
        if (term.hasSelection()) {
          navigator.clipboard?.writeText(term.getSelection()).catch((err) => console.warn('paddock terminal: copy', err));
          term.clearSelection();
        }
        return false;
      }
      if (isPaste(event)) {
        event.preventDefault();
        navigator.clipboard?.readText()
          .then((text) => { if (text) term.paste(text); })
          .catch((err) => console.warn('paddock terminal: paste', err));
        return false;
      }
      return true;
    }

    connectedCallback() {
      if (this.started) return;
      this.started = true;
      this.status = document.createElement('p');
      this.status.className = 'terminal-status';
      this.status.setAttribute('role', 'status');
      this.screen = document.createElement('div');
      this.screen.className = 'terminal-screen';
      this.append(this.screen, this.status);
      this.report('connecting', this.dataset.textConnecting);
      this.start().catch((err) => {
        console.warn('paddock terminal:', err);
        this.report('failed', this.dataset.textFailed);
      });
    }

    disconnectedCallback() {
      this.removed = true;
      this.resizeObserver?.disconnect();
      if (this.socket && this.socket.readyState <= WebSocket.OPEN) this.socket.close();
      this.term?.dispose();
    }

    report(state, text) {
      this.dataset.state = state;
      this.status.textContent = text ?? '';
    }

    send(message) {
      if (this.socket?.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(message));
    }

    async start() {
      await loadXterm();
      if (this.removed) return;
      const term = new globalThis.Terminal({
        cursorBlink: true,
        fontFamily: 'ui-monospace, "SFMono-Regular", Menlo, Consolas, "Liberation Mono", monospace',
        fontSize: 14,
        // At 1.0 a row is exactly the font's size, and the glyphs that sit below the baseline (`_`
        // above all) were cut off by the next row: `a_b_c` read as "a b c".
        lineHeight: 1.2,
        scrollback: 5000,
        rightClickSelectsWord: true,
      });
      const fit = new globalThis.FitAddon.FitAddon();
      term.loadAddon(fit);
      term.open(this.screen);
      fit.fit();
      this.term = term;
      term.attachCustomKeyEventHandler((event) => this.clipboardKey(event));

      const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
      const url = `${scheme}//${location.host}${this.dataset.path}?rows=${term.rows}&cols=${term.cols}`;
      const socket = new WebSocket(url);
      socket.binaryType = 'arraybuffer';
      this.socket = socket;
      let ended = false;

      socket.onopen = () => {
        this.report('open', '');
        term.focus();
      };
      socket.onmessage = (event) => {
        if (typeof event.data !== 'string') {
          term.write(new Uint8Array(event.data));
          return;
        }
        const message = JSON.parse(event.data);
        if ('exit' in message) {
          ended = true;
          this.report('exited', (this.dataset.textExited ?? '').replace('@code', String(message.exit)));
        }
      };
      socket.onclose = () => {
        if (!ended && !this.removed) {
          // Refused before opening (403, 409) or cut off later: either way the shell is gone.
          this.report(this.dataset.state === 'open' ? 'closed' : 'failed',
            this.dataset.state === 'open' ? this.dataset.textClosed : this.dataset.textFailed);
        }
      };
      term.onData((input) => this.send({ input }));
      term.onResize(({ rows, cols }) => this.send({ resize: [rows, cols] }));
      // The element follows its container (window size, sidebar); the fit addon turns pixels into cells.
      this.resizeObserver = new ResizeObserver(() => {
        if (this.offsetWidth > 0) fit.fit();
      });
      this.resizeObserver.observe(this);
    }
  }

  if (!customElements.get('paddock-terminal')) customElements.define('paddock-terminal', PaddockTerminal);
})();
