/* edgec_stream.h: the stream type of edgec's HLS projects, and how their dataflow regions run.
 *
 * edgec::stream<T> is a FIFO of values of T between two processes of a dataflow region, its
 * depth given where it is declared (a STREAM pragma for synthesis, the constructor's `depth`
 * for C-simulation). In synthesis (__SYNTHESIS__) it is the tool's hls::stream<T>, and the
 * processes of a region are calls in a function with `#pragma HLS DATAFLOW`. In
 * C-simulation (g++) it is this file's own, and each process of a region runs as a thread,
 * so that a FIFO holds at most its depth of values as the hardware's does and the processes block
 * on it as they would there:
 *
 *   - a process that reads an empty stream, or writes a full one, waits for another to move;
 *   - when every process of the region waits and none can move, the region is deadlocked:
 *     the simulation says which process waits on which stream (empty or full, its depth) and
 *     exits with status 3, instead of hanging;
 *   - outside a region (a testbench filling or draining the top function's ports) reading an
 *     empty stream or writing a full one is an underflow or an overflow: said, status 3;
 *   - after the region, a stream that still holds values (its consumer read fewer than its
 *     producer wrote) is said, status 3.
 *
 * With EDGEC_CSIM=sequential the processes of a region run one after another on the calling
 * thread, in the order the region lists them (its dataflow order), and a stream holds all
 * its producer writes, as Vitis HLS's own C-simulation runs a dataflow region: much faster
 * for large designs (no thread waits for another at every value), but blind to depths, so
 * it cannot see a deadlock; a process that reads more than was written is said (status 3).
 *
 * With the environment variable EDGEC_CSIM_TRACE set to a folder, every stream that carries
 * a value of the model (its trace name) writes all it carried to FOLDER/NAME.bin when the
 * region ends, for comparing each inter-layer stream with edgec's interpreter; and a kernel's
 * counters (EDGEC_CSIM_COUNTS: a sparse unit's work per PE) are added up, run after run, in
 * FOLDER/NAME.counts, one number a line.
 *
 * Written for edgec; it is not Xilinx's hls_stream.h, whose licence is not open. */
#ifndef EDGEC_STREAM_H
#define EDGEC_STREAM_H

#ifdef __SYNTHESIS__

#include <hls_stream.h>
#define EDGEC_CSIM_COUNTS(name, counts, n) /* C-simulation only */

namespace edgec {
template <typename T> class stream : public hls::stream<T> {
  public:
    stream() {}
    /* the depth of a design's stream is its STREAM pragma's (the C-simulation's is this) */
    explicit stream(const char *name, const char *trace = 0, size_t depth = 2)
        : hls::stream<T>(name)
    {
        (void)trace;
        (void)depth;
    }
};
} // namespace edgec

#define EDGEC_DATAFLOW_BEGIN(name)
#define EDGEC_PROCESS(fn, ...) fn(__VA_ARGS__)
#define EDGEC_DATAFLOW_END

#else /* C-simulation */

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace edgec {

class stream_base;

/* What every stream and region of the simulation shares: one lock, and who waits on what. */
struct simulation {
    std::mutex lock;
    const char *region = 0; /* the region running, or none (0) */
    bool sequential = false; /* EDGEC_CSIM=sequential: processes one after another */
    bool spawning = false;  /* its processes are still being started */
    int running = 0;        /* its processes not waiting */
    struct waiter {
        const char *process;
        stream_base *on;
        bool reading;
    };
    std::vector<waiter> waiting;
    std::vector<stream_base *> streams; /* those of the running region */

    static simulation &get()
    {
        static simulation s;
        return s;
    }
};

/* the process the calling thread runs ("the testbench" outside a region) */
inline const char *&current_process()
{
    static thread_local const char *process = "the testbench";
    return process;
}

[[noreturn]] inline void fail(const std::string &message)
{
    std::fprintf(stderr, "edgec C-simulation: %s\n", message.c_str());
    std::fflush(stderr);
    std::fflush(stdout);
    std::_Exit(3);
}

class stream_base {
  public:
    stream_base(const char *name, const char *trace, size_t depth)
        : name_(name ? name : "stream"), trace_(trace), depth_(depth)
    {
    }
    virtual ~stream_base() {}
    virtual size_t size() const = 0;
    virtual void dump(const char *folder) const = 0;
    const char *name() const { return name_; }
    size_t depth() const { return depth_; }
    bool ready(bool reading) const { return reading ? size() > 0 : size() < depth_; }

  protected:
    /* Wait (lock held) until this stream can be read (`reading`) or written. */
    void wait(std::unique_lock<std::mutex> &held, bool reading)
    {
        simulation &sim = simulation::get();
        if (ready(reading) || (sim.sequential && sim.region != 0 && !reading))
            return; /* (sequentially, a stream holds what its producer writes) */
        if (sim.region != 0 && sim.sequential)
            fail(std::string("sequential C-simulation: ") + current_process() +
                 " read from empty stream " + name_ + ": its producer runs later in the "
                 "dataflow region, or wrote fewer values");
        if (sim.region == 0)
            fail(std::string(reading ? "underflow: " : "overflow: ") + current_process() +
                 (reading ? " read from empty stream " : " wrote to full stream ") + name_ +
                 " (depth " + std::to_string(depth_) + ")");
        sim.waiting.push_back({current_process(), this, reading});
        --sim.running;
        check_deadlock();
        moved_.wait(held, [&] { return ready(reading); });
        ++sim.running;
        for (size_t i = 0; i < sim.waiting.size(); ++i)
            if (sim.waiting[i].on == this && sim.waiting[i].reading == reading &&
                sim.waiting[i].process == current_process()) {
                sim.waiting.erase(sim.waiting.begin() + i);
                break;
            }
    }

  public:
    /* Called with the lock held when a process starts waiting or ends. */
    static void check_deadlock()
    {
        simulation &sim = simulation::get();
        if (sim.running > 0 || sim.spawning)
            return;
        for (const simulation::waiter &w : sim.waiting)
            if (w.on->ready(w.reading))
                return; /* it will move when it wakes */
        if (sim.waiting.empty())
            return;
        std::string why = std::string("deadlock in dataflow region ") + sim.region +
                          ": every process waits on a stream and none can move:";
        for (const simulation::waiter &w : sim.waiting)
            why += std::string("\n  ") + w.process + " waits to " +
                   (w.reading ? "read from empty stream " : "write to full stream ") +
                   w.on->name() + " (depth " + std::to_string(w.on->depth()) + ", holding " +
                   std::to_string(w.on->size()) + ")";
        why += "\na stream that its consumer reads after another must hold what arrives "
               "meanwhile (a residual branch): give it the depth edgec's depth sizing chose "
               "(its NAME_DEPTH_ macro in NAME_hls.h)";
        fail(why);
    }

  protected:
    const char *name_;
    const char *trace_;
    size_t depth_;
    std::condition_variable moved_; /* its reader or writer waits here (the lock held) */
};

template <typename T> class stream : public stream_base {
  public:
    stream() : stream_base("stream", 0, 2) { attach(); }
    explicit stream(const char *name, const char *trace = 0, size_t depth = 2)
        : stream_base(name, trace, depth)
    {
        attach();
    }
    ~stream()
    {
        simulation &sim = simulation::get();
        std::lock_guard<std::mutex> held(sim.lock);
        sim.streams.erase(std::remove(sim.streams.begin(), sim.streams.end(), this),
                          sim.streams.end());
    }

    T read()
    {
        simulation &sim = simulation::get();
        std::unique_lock<std::mutex> held(sim.lock);
        wait(held, true);
        T v = fifo_.front();
        fifo_.pop_front();
        moved_.notify_all();
        return v;
    }

    void write(const T &v)
    {
        simulation &sim = simulation::get();
        std::unique_lock<std::mutex> held(sim.lock);
        wait(held, false);
        fifo_.push_back(v);
        if (trace_)
            carried_.push_back(v);
        moved_.notify_all();
    }

    bool empty() const { return size() == 0; }
    size_t size() const override { return fifo_.size(); }

    void dump(const char *folder) const override
    {
        if (!trace_)
            return;
        std::string path = std::string(folder) + "/" + trace_ + ".bin";
        FILE *f = std::fopen(path.c_str(), "wb");
        if (f == 0)
            fail("cannot write the trace " + path);
        if (!carried_.empty())
            std::fwrite(carried_.data(), sizeof(T), carried_.size(), f);
        std::fclose(f);
    }

  private:
    void attach()
    {
        simulation &sim = simulation::get();
        std::lock_guard<std::mutex> held(sim.lock);
        sim.streams.push_back(this);
    }

    std::deque<T> fifo_;
    std::vector<T> carried_;
};

/* A dataflow region: its processes run as threads from `spawn` to `join`. */
class region {
  public:
    explicit region(const char *name)
    {
        simulation &sim = simulation::get();
        std::lock_guard<std::mutex> held(sim.lock);
        if (sim.region != 0)
            fail(std::string("dataflow region ") + name + " started inside region " +
                 sim.region + "; edgec's projects do not nest them");
        sim.region = name;
        const char *mode = std::getenv("EDGEC_CSIM");
        sim.sequential = mode != 0 && std::string(mode) == "sequential";
        sim.spawning = true;
        sim.running = 0;
        sim.waiting.clear();
        for (stream_base *s : sim.streams)
            first_.push_back(s);
    }

    template <typename F> void spawn(const char *process, F body)
    {
        simulation &sim = simulation::get();
        if (sim.sequential) { /* now, on this thread: the region's processes in order */
            current_process() = process;
            body();
            current_process() = "the testbench";
            return;
        }
        {
            std::lock_guard<std::mutex> held(sim.lock);
            ++sim.running;
        }
        threads_.emplace_back([process, body]() {
            current_process() = process;
            body();
            simulation &s = simulation::get();
            std::lock_guard<std::mutex> held(s.lock);
            --s.running;
            stream_base::check_deadlock();
        });
    }

    void join()
    {
        simulation &sim = simulation::get();
        {
            std::lock_guard<std::mutex> held(sim.lock);
            sim.spawning = false; /* all started: from now on, all waiting is a deadlock */
            stream_base::check_deadlock();
        }
        for (std::thread &t : threads_)
            t.join();
        std::lock_guard<std::mutex> held(sim.lock);
        const char *folder = std::getenv("EDGEC_CSIM_TRACE");
        for (stream_base *s : sim.streams) {
            if (folder != 0)
                s->dump(folder);
            bool port = std::find(first_.begin(), first_.end(), s) != first_.end();
            if (!port && s->size() != 0)
                fail(std::string("stream ") + s->name() + " still holds " +
                     std::to_string(s->size()) + " values after dataflow region " +
                     sim.region + ": its consumer read fewer than its producer wrote");
        }
        sim.region = 0;
    }

  private:
    std::vector<std::thread> threads_;
    std::vector<stream_base *> first_; /* the streams made before it: the top's ports */
};

} // namespace edgec

namespace edgec {
/* a kernel's counters: added to FOLDER/NAME.counts where EDGEC_CSIM_TRACE names a folder */
template <typename T> void csim_counts(const char *name, const T *counts, int n)
{
    const char *folder = std::getenv("EDGEC_CSIM_TRACE");
    if (folder == 0)
        return;
    std::string path = std::string(folder) + "/" + name + ".counts";
    std::vector<unsigned long long> sum(n, 0);
    if (FILE *f = std::fopen(path.c_str(), "r")) {
        for (int i = 0; i < n; ++i)
            if (std::fscanf(f, "%llu", &sum[i]) != 1)
                sum[i] = 0;
        std::fclose(f);
    }
    if (FILE *f = std::fopen(path.c_str(), "w")) {
        for (int i = 0; i < n; ++i)
            std::fprintf(f, "%llu\n", sum[i] + (unsigned long long)counts[i]);
        std::fclose(f);
    }
}
} // namespace edgec
#define EDGEC_CSIM_COUNTS(name, counts, n) edgec::csim_counts(name, counts, n)

#define EDGEC_DATAFLOW_BEGIN(name) { edgec::region edgec_region_(name);
#define EDGEC_PROCESS(fn, ...) edgec_region_.spawn(#fn, [&]() { fn(__VA_ARGS__); })
#define EDGEC_DATAFLOW_END edgec_region_.join(); }

#endif /* __SYNTHESIS__ */
#endif /* EDGEC_STREAM_H */
