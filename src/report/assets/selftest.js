// First, before anything else runs, on the report and the trend page: count script errors,
// console errors, CSP violations and alerts, so the page can report on itself (#selftest) and
// tests can read the result.
(function () {
  var st = window.volleySelftest = { errors: [], violations: [], alerts: 0 };
  window.onerror = function (msg, src, line) { st.errors.push(String(msg) + ' (line ' + line + ')'); };
  window.addEventListener('unhandledrejection', function (e) { st.errors.push('unhandled rejection: ' + String(e.reason)); });
  var consoleError = console.error;
  console.error = function () {
    st.errors.push('console.error: ' + Array.prototype.join.call(arguments, ' '));
    return consoleError.apply(console, arguments);
  };
  document.addEventListener('securitypolicyviolation', function (e) {
    st.violations.push(e.violatedDirective + ' ' + e.blockedURI);
  });
  window.alert = function () { st.alerts++; };
})();
