"""Headless Chromium through WebDriver, as the review tests drive it."""

import os

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import WebDriverWait


def start():
    """A driver for Debian's chromium (VOUCH_CHROMIUM, VOUCH_CHROMEDRIVER) and a 20 s wait."""
    options = Options()
    options.binary_location = os.environ.get("VOUCH_CHROMIUM", "/usr/bin/chromium")
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                "--disable-gpu", "--window-size=1280,1000"):
        options.add_argument(arg)
    service = Service(os.environ.get("VOUCH_CHROMEDRIVER", "/usr/bin/chromedriver"))
    driver = webdriver.Chrome(service=service, options=options)
    return driver, WebDriverWait(driver, 20)
