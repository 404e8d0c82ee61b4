// Calendar: drag a post to another day to move it. The drop fills and submits the same plain form the List view
// uses (POST .../schedules/{id}/reschedule, day = the drop's day, same time of day); the answer carries an Undo.
(() => {
  const form = document.getElementById("move-form");
  if (!form) return;
  const base = form.querySelector("[data-base]").dataset.base;
  let dragged = null;
  document.querySelectorAll(".sched[draggable=true]").forEach((el) => {
    el.addEventListener("dragstart", (event) => {
      dragged = el;
      event.dataTransfer.effectAllowed = "move";
      event.dataTransfer.setData("text/plain", el.dataset.schedule);
    });
    el.addEventListener("dragend", () => { dragged = null; });
  });
  document.querySelectorAll("td[data-day]").forEach((cell) => {
    cell.addEventListener("dragover", (event) => {
      if (!dragged) return;
      event.preventDefault();
      cell.classList.add("drop");
    });
    cell.addEventListener("dragleave", () => cell.classList.remove("drop"));
    cell.addEventListener("drop", (event) => {
      event.preventDefault();
      cell.classList.remove("drop");
      if (!dragged || dragged.closest("td") === cell) return;
      form.action = base + encodeURIComponent(dragged.dataset.schedule) + "/reschedule";
      form.elements.day.value = cell.dataset.day;
      form.submit();
    });
  });
})();
