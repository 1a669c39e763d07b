#!/usr/bin/env python3
"""Drives the playground (GET /) of `unmask serve` in headless Chromium via Selenium.

    .venv/bin/python tests/server/test_playground.py --unmask build/release/unmask [--out DIR]

Starts the server with both TinyStories twins, loads the page, generates in both panels and checks that
the diffusion canvas visibly changes over time (element screenshots, saved to --out), that masked cells
appear and are all gone at the end, that both panels get text and live stats, that a server error (400)
is shown in the panels, that Stop aborts, and that the browser logged no JS errors. One line per check;
exit code 0 when all pass. Needs Debian's chromium and chromium-driver and selenium (scripts/requirements.txt).
"""
import argparse
import hashlib
import os
import re
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_util import AR, AR_ID, LLADA, LLADA_ID, UnmaskServer  # noqa: E402

os.environ.setdefault("SE_OFFLINE", "true")  # selenium-manager must never try the network
from selenium import webdriver  # noqa: E402
from selenium.common.exceptions import TimeoutException, WebDriverException  # noqa: E402
from selenium.webdriver.chrome.options import Options  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
PROMPT = "Once upon a time, there was a little dog named Max. He"
MAX_TOKENS = 128  # exact diffusion (steps = gen length): ~1 s of canvas at -t 1, room for several screenshots
PAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                    "tools", "server", "playground", "index.html")

failures = []


def check(name, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {name}" + (f": {detail}" if detail else ""), flush=True)
    if not ok:
        failures.append(name)
    return ok


def make_driver():
    opts = Options()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,900"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(30)
    driver.set_script_timeout(30)
    return driver


def js(driver, script, *args):
    return driver.execute_script(script, *args)


def text_of(driver, el_id):
    return js(driver, "const e = document.getElementById(arguments[0]); return e ? e.textContent : null;", el_id)


def count(driver, selector):
    return js(driver, "return document.querySelectorAll(arguments[0]).length;", selector)


def running(driver):
    return js(driver, "return document.getElementById('generate').disabled;")


def wait(driver, timeout, cond, what):
    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.05).until(lambda d: cond(d))
    except TimeoutException:
        raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def browser_log(driver):
    """SEVERE browser console entries, or None when the driver has no get_log."""
    try:
        return [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
    except (WebDriverException, AttributeError) as e:
        return None if "get_log" in str(e) or isinstance(e, AttributeError) or "unknown command" in str(e) else []


def set_field(driver, el_id, value):
    el = driver.find_element(By.ID, el_id)
    el.clear()
    el.send_keys(str(value))


def number(pattern, s):
    m = re.search(pattern, s or "")
    return float(m.group(1)) if m else None


def run(args, srv, driver):
    with urllib.request.urlopen(srv.url + "/", timeout=10) as r:
        served = r.read()
    with open(PAGE, "rb") as f:
        if served != f.read():
            print(f"note the page served at / differs from {PAGE}: the binary embeds an older copy (rebuild)")
    driver.get(srv.url + "/")
    check("page title contains 'unmask'", "unmask" in driver.title.lower(), repr(driver.title))

    # Models: each panel lists its twin (and auto), picked by default.
    wait(driver, 15, lambda d: js(d, "return document.getElementById('generate').disabled === false;"), "models to load")
    for kind, mid in (("diffusion", LLADA_ID), ("ar", AR_ID)):
        opts = js(driver, "return [...document.getElementById(arguments[0]).options].map(o => o.value);", kind + "-model")
        sel = js(driver, "return document.getElementById(arguments[0]).value;", kind + "-model")
        shown = driver.find_element(By.ID, kind + "-panel").is_displayed()
        check(f"{kind} panel shown and lists {mid} (+auto), selected by default",
              shown and mid in opts and "auto" in opts and sel == mid, f"shown={shown} options={opts} selected={sel}")
    listing = text_of(driver, "models")
    check("header lists model ids with engines", f"{LLADA_ID} (diffusion)" in listing and f"{AR_ID} (ar)" in listing, listing)

    # Generate: watch the canvas change.
    set_field(driver, "prompt", PROMPT)
    set_field(driver, "max-tokens", MAX_TOKENS)
    set_field(driver, "temperature", 0)
    canvas = driver.find_element(By.ID, "diffusion-canvas")
    driver.find_element(By.ID, "generate").click()
    shots, digests, max_masked, t0 = [], [], 0, time.time()
    while time.time() - t0 < args.timeout:
        tick = time.time()
        max_masked = max(max_masked, count(driver, "#diffusion-canvas .cell.mask"))
        if count(driver, "#diffusion-canvas .cell"):
            png = canvas.screenshot_as_png
            d = hashlib.sha256(png).hexdigest()
            if d not in digests:
                digests.append(d)
                shots.append(png)
        if not running(driver):
            break
        time.sleep(max(0.0, 0.1 - (time.time() - tick)))  # one element screenshot every ~100 ms
    gen_s = time.time() - t0
    finished = not running(driver)
    check(f"generation finished within {args.timeout} s", finished, f"{gen_s:.1f} s")
    for i, png in enumerate(shots):
        with open(os.path.join(args.out, f"canvas_{i:03d}.png"), "wb") as f:
            f.write(png)
    driver.save_screenshot(os.path.join(args.out, "page_done.png"))
    check("diffusion canvas changes over time (>= 3 distinct element screenshots)", len(shots) >= 3,
          f"{len(shots)} distinct in {gen_s:.1f} s, saved to {args.out}")
    check("masked cells visible during generation", max_masked > 0, f"max masked cells seen: {max_masked}")
    cells = count(driver, "#diffusion-canvas .cell")
    masked_end = count(driver, "#diffusion-canvas .cell.mask")
    check("no masked cells at the end", cells > 0 and masked_end == 0, f"{masked_end} masked of {cells} cells")

    errors = {k: text_of(driver, k + "-error") for k in ("diffusion", "ar")}
    check("no errors shown in the panels", not any(errors.values()), repr(errors))
    dtext, atext = text_of(driver, "diffusion-text"), text_of(driver, "ar-text")
    check("diffusion final text non-empty", bool(dtext and dtext.strip()), repr(dtext))
    check("AR text non-empty", bool(atext and atext.strip()), repr(atext))

    dstats, astats = text_of(driver, "diffusion-stats"), text_of(driver, "ar-stats")
    nfe, dtps, final_nfe = number(r"NFE (\d+)", dstats), number(r"([\d.]+) tok/s", dstats), number(r"nfe (\d+)", dstats)
    check("diffusion stats: NFE > 0, tok/s > 0, final usage and x_unmask",
          bool(nfe and dtps and final_nfe and "usage:" in dstats and "x_unmask:" in dstats), repr(dstats))
    ntok, atps, ar_nfe = number(r"tokens (\d+)", astats), number(r"([\d.]+) tok/s", astats), number(r"nfe (\d+)", astats)
    ttft = number(r"TTFT ([\d.]+) ms", astats)
    check("AR stats: tokens > 0, tok/s > 0, TTFT, final usage and x_unmask",
          bool(ntok and atps and ttft is not None and ar_nfe and "usage:" in astats and "x_unmask:" in astats), repr(astats))

    log = browser_log(driver)
    if log is None:
        print("skip no JS errors in the browser log: get_log('browser') is not supported by this driver")
    else:
        check("no JS errors in the browser log", not log, repr(log))

    # Stop: abort while the canvas is still being denoised; the page recovers and the server stays up.
    driver.find_element(By.ID, "generate").click()
    wait(driver, 15, lambda d: count(d, "#diffusion-canvas .cell.mask") > 0, "the first canvas after Generate")
    driver.find_element(By.ID, "stop").click()
    wait(driver, 10, lambda d: not running(d), "Generate to be enabled again after Stop")
    dstats = text_of(driver, "diffusion-stats")
    check("Stop aborts the diffusion stream", "stopped" in dstats and not text_of(driver, "diffusion-error"), repr(dstats))
    check("server alive after an aborted stream", srv.alive())
    log = browser_log(driver)
    if log is not None:
        check("no JS errors after Stop", not log, repr(log))

    # Error: max_tokens beyond the context -> 400 context_length_exceeded, shown in both panels.
    set_field(driver, "max-tokens", 100000)
    driver.find_element(By.ID, "generate").click()
    wait(driver, 15, lambda d: not running(d) and count(d, ".panel .error") >= 2, "errors in both panels")
    for kind in ("diffusion", "ar"):
        els = driver.find_elements(By.CSS_SELECTOR, f"#{kind}-panel .error")
        msg = els[0].text if els else ""
        check(f"{kind} panel shows the server's 400 error", bool(els) and els[0].is_displayed() and "400" in msg and "context" in msg, repr(msg))
    driver.save_screenshot(os.path.join(args.out, "page_error.png"))
    log = browser_log(driver)
    if log is not None:
        unexpected = [e for e in log if "status of 400" not in e.get("message", "")]
        check("no JS errors besides the expected 400 responses", not unexpected, repr(unexpected))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--unmask", required=True, help="path to the unmask binary")
    ap.add_argument("--out", default=None, help="directory for screenshots (default: a new temp dir)")
    ap.add_argument("--timeout", type=float, default=120.0, help="bound on one generation, seconds")
    args = ap.parse_args()
    args.out = args.out or tempfile.mkdtemp(prefix="unmask-playground-")
    os.makedirs(args.out, exist_ok=True)

    srv = driver = None
    try:
        srv = UnmaskServer(args.unmask, ["-m", LLADA, "-m", AR, "-t", "1"]).__enter__()
        print(f"info server {srv.url} (log {srv.log}); screenshots in {args.out}", flush=True)
        driver = make_driver()
        run(args, srv, driver)
    except AssertionError as e:
        check("unexpected stop", False, str(e))
    except Exception as e:  # noqa: BLE001 - report anything (driver/server start) as a failed check
        check("unexpected exception", False, f"{type(e).__name__}: {e}")
    finally:
        if driver is not None:
            try:
                driver.save_screenshot(os.path.join(args.out, "page_last.png"))
            except Exception:  # noqa: BLE001
                pass
            driver.quit()
        if srv is not None:
            if failures:
                print("--- server log (tail) ---\n" + srv.stderr()[-3000:], flush=True)
            srv.__exit__(None, None, None)
    print(f"{'FAILED' if failures else 'PASSED'}: {len(failures)} failed check(s)" + (f": {failures}" if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
