"""Drive the review pages in headless Chromium (WebDriver), as a person would.

Usage: review.py SIGN_IN_URL APPROVE_ID REJECT_ID FORGED_ID SCREENSHOT_DIR

Signs in with the one-time link, reads the queue, opens one proposal and
approves it, opens another and rejects it with a reason, follows the
decided one to its provenance page and the header to the gate's health,
then loads a page
from another origin (a local http.server on another port) that posts a
forged approval of a third; and tries the sign-in link a second time.
Prints one JSON object of what the browser saw; the Rust test checks it
and the files on disk. Screenshots go to SCREENSHOT_DIR.
"""

import http.server
import json
import os
import sys

import browser
import threading

from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec

sign_in, approve_id, reject_id, forged_id, shots = sys.argv[1:6]
base = sign_in.split("/ui/login")[0]
os.makedirs(shots, exist_ok=True)

driver, wait = browser.start()
seen = {}


def text_of(css):
    return wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, css))).text


try:
    driver.get(sign_in)
    seen["queue_count"] = int(text_of("#count"))
    seen["actor"] = text_of("#actor")
    seen["queue_links"] = [a.text for a in driver.find_elements(By.CSS_SELECTOR, "a.proposal")]
    driver.save_screenshot(os.path.join(shots, "queue.png"))

    # Approve one: open it from the queue, look at the evidence, click.
    driver.find_element(By.CSS_SELECTOR, f'a[href="/ui/proposal/{approve_id}"]').click()
    seen["highlighted"] = [m.text for m in driver.find_elements(By.CSS_SELECTOR, ".citation mark")]
    seen["proposal_text"] = text_of("#text")
    driver.save_screenshot(os.path.join(shots, "proposal.png"))
    driver.find_element(By.ID, "approve").click()
    seen["after_approve"] = text_of("#notice")
    seen["count_after_approve"] = int(text_of("#count"))

    # Reject another with a reason.
    driver.get(f"{base}/ui/proposal/{reject_id}")
    driver.find_element(By.ID, "reason").send_keys("the source says Tuesday, not Monday")
    driver.find_element(By.ID, "reject").click()
    seen["after_reject"] = text_of("#notice")
    driver.save_screenshot(os.path.join(shots, "after-decisions.png"))

    # Deciding it again: a clear message, nothing written.
    driver.get(f"{base}/ui/proposal/{approve_id}")
    seen["decided_page"] = driver.find_element(By.CSS_SELECTOR, "main").text

    # From the decided proposal to the claim's whole story, then the
    # gate's health from the header.
    driver.find_element(By.ID, "why").click()
    seen["why_gate"] = text_of("#gate")
    seen["why_highlighted"] = [m.text for m in driver.find_elements(By.CSS_SELECTOR, ".citation mark")]
    seen["why_proposals"] = text_of("#proposals")
    driver.save_screenshot(os.path.join(shots, "provenance.png"))
    driver.find_element(By.LINK_TEXT, "Gate health").click()
    seen["stats_queue"] = text_of("#queue")
    seen["stats_oldest"] = text_of("#oldest")
    seen["stats_reviewers"] = text_of("#by-reviewer")
    driver.save_screenshot(os.path.join(shots, "gate-health.png"))

    # A page on another origin posts a forged approval (it cannot know the
    # CSRF token, and its Origin is not the server's).
    evil_html = (
        "<!doctype html><title>evil</title><body>"
        f'<form id="f" method="post" action="{base}/ui/proposal/{forged_id}/approve">'
        '<input name="csrf" value="guessed"></form>'
        '<script>document.getElementById("f").submit()</script></body>'
    ).encode()

    class Evil(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(evil_html)

        def log_message(self, *args):
            pass

    evil = http.server.HTTPServer(("127.0.0.1", 0), Evil)
    threading.Thread(target=evil.serve_forever, daemon=True).start()
    driver.get(f"http://127.0.0.1:{evil.server_address[1]}/")
    wait.until(lambda d: d.current_url.startswith(base))
    seen["forged_page"] = text_of("main")
    driver.save_screenshot(os.path.join(shots, "forged-post.png"))
    evil.shutdown()

    # The sign-in link works once: a second browser profile gets nothing.
    driver.delete_all_cookies()
    driver.get(sign_in)
    seen["second_sign_in"] = text_of("main")
    driver.get(base + "/")
    seen["signed_out_queue"] = text_of("main")
except Exception:
    # What the browser was looking at, for whoever reads the failure.
    print(driver.current_url, file=sys.stderr)
    print(driver.find_element(By.TAG_NAME, "body").text, file=sys.stderr)
    driver.save_screenshot(os.path.join(shots, "failure.png"))
    raise
finally:
    driver.quit()

print(json.dumps(seen))
