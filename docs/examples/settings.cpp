// SPDX-License-Identifier: BSD-3-Clause
// Settings in code and Skein's log: the Runtime's log level, Skein's lines handed to the
// application's own output, a Communicator's timeout and agreement check set in code, and the
// settings in effect (a variable that is set overrides the code's value).
// Built by the `docs-examples` target (docs/CMakeLists.txt); quoted in docs/guide.md. Run with
//   POCL_DEVICES="pthread pthread pthread pthread" mpirun -n 2 ./settings
//   SKEIN_LOG_LEVEL=warning SKEIN_COLLECTIVE_TIMEOUT=5 mpirun -n 2 ./settings   (the variables win)
#include <skein/skein.hpp>

#include <iostream>
#include <sstream>
#include <string_view>
#include <vector>

int main(int argc, char** argv) try {
  // Skein's lines go where the application's go (here stdout, tagged), one whole line per call.
  skein::set_log_sink([](skein::LogLevel level, std::string_view line) {
    std::cout << "[mysim " << skein::name(level) << "] " << line << std::endl;
  });
  // The log level in code: info also says what Skein chose (SKEIN_LOG_LEVEL overrides it).
  skein::Runtime runtime(&argc, &argv, {.log_level = skein::LogLevel::info});
  try {
    // Every collective given 60 s, and the ranks' calls compared, whatever the defaults are.
    skein::Communicator comm(runtime, {.timeout_seconds = 60, .check_agreement = true});
    const skein::CommunicatorOptions& used = comm.options();  // what is in effect
    // The application's own lines through the same log: said alike by every rank, printed once.
    std::ostringstream said;
    said << "collectives over " << comm.backend_description() << ", timeout "
         << *used.timeout_seconds << " s, agreement check "
         << (*used.check_agreement ? "on" : "off");
    skein::log_message(skein::LogLevel::info, said.str(), skein::LogScope::collective);

    const skein::Queue queue(comm.context());
    std::vector<skein::Array> ones;
    for (std::size_t l = 0; l < comm.local_size(); ++l) {
      ones.push_back(
          skein::Array::from_host(queue, std::vector<double>{1.0}, {}, comm.device_idx(l)));
    }
    comm.all_reduce(queue, ones, ones, skein::ReduceOp::sum);
    const bool ok = ones.front().get<double>().front() == static_cast<double>(comm.size());
    if (runtime.rank() == 0) std::cout << (ok ? "ok" : "WRONG") << "\n";
    return ok ? 0 : 1;
  } catch (const skein::Error& e) {  // every rank reports its own error, before MPI ends
    std::cerr << e.what() << "\n";
    return 1;
  }
} catch (const skein::Error& e) {  // the Runtime could not start (a bad SKEIN_LOG_LEVEL, ...)
  std::cerr << e.what() << "\n";
  return 1;
}
