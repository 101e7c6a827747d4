// Sends a retrigger or backfill request to the API with the bearer token typed in.
"use strict";
document.querySelectorAll("form.action").forEach((form) => {
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const status = document.getElementById("action-result");
    const data = new FormData(form);
    const body = {};
    for (const [name, value] of data.entries()) {
      if (name !== "token") body[name] = Number(value);
    }
    status.textContent = "Sending…";
    try {
      const answer = await fetch(form.dataset.url, {
        method: "POST",
        headers: {
          "Authorization": "Bearer " + data.get("token"),
          "Content-Type": "application/json",
        },
        body: JSON.stringify(body),
      });
      const json = await answer.json();
      if (!answer.ok) {
        status.textContent = "Refused (" + answer.status + "): " + JSON.stringify(json.detail);
        return;
      }
      status.textContent = json.requests
        .map((r) => r.strategy + " on " + r.revision.slice(0, 12) + ": " + r.state)
        .join("; ");
    } catch (error) {
      status.textContent = "Could not reach sheriff: " + error;
    }
  });
});
