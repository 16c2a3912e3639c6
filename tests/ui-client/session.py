"""Review one agent session's 30 proposals with the keyboard alone.

Usage: session.py SIGN_IN_URL SCREENSHOT_DIR

Signs in with the one-time link; on the queue presses `j` (to the
session's "review them together" link) and `o` (open); on the group page
presses `j` through all 30 proposals (each shown whole), `x` on the last
to deselect it, and `a` to approve the other 29 together; back on the queue, `j`, `o` opens the one left, `r` goes to
the reason, which is typed, then Tab and Enter reject it. Prints one JSON
object of what the browser saw, with the keys pressed and pages loaded.
"""

import json
import os
import sys

import browser

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec

sign_in, shots = sys.argv[1:3]
os.makedirs(shots, exist_ok=True)

driver, wait = browser.start()
seen = {"keys": 0, "typed": 0, "loads": 1}


def press(*keys):
    for k in keys:
        ActionChains(driver).send_keys(k).perform()
        seen["keys"] += 1


def loaded(css):
    seen["loads"] += 1
    return wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, css)))


try:
    driver.get(sign_in)
    seen["queue_count"] = int(loaded("#count").text)
    seen["loads"] -= 1  # the sign-in page load counted above
    press("j")
    seen["focused"] = driver.switch_to.active_element.get_attribute("class")
    press("o")
    loaded("#item-0")
    seen["group_count"] = int(driver.find_element(By.ID, "count").text)
    seen["group_task"] = driver.find_element(By.TAG_NAME, "main").text.split("\n")[1]
    items = driver.find_elements(By.CSS_SELECTOR, "section.item")
    visited = []
    for _ in items:
        press("j")
        visited.append(driver.switch_to.active_element.get_attribute("id"))
    seen["visited"] = len(set(visited))
    press("x")
    box = driver.switch_to.active_element.find_element(By.CSS_SELECTOR, "input[type=checkbox]")
    seen["deselected"] = box.get_attribute("value")
    driver.save_screenshot(os.path.join(shots, "group.png"))
    press("a")
    seen["notice"] = loaded("#notice").text
    seen["count_after"] = int(driver.find_element(By.ID, "count").text)
    press("j", "j")  # the group link, then the one proposal left
    press("o")
    loaded("#text")
    seen["opened"] = driver.current_url.rsplit("/", 1)[-1]
    press("r")
    reason = "it says the opposite of its source"
    ActionChains(driver).send_keys(reason).perform()
    seen["typed"] += len(reason)
    press(Keys.TAB, Keys.ENTER)
    seen["final"] = loaded("#notice").text
except Exception as e:  # report what was seen so far
    seen["error"] = repr(e)
    driver.save_screenshot(os.path.join(shots, "session-error.png"))
finally:
    driver.quit()
print(json.dumps(seen))
