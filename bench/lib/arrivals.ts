import { now } from './stats.js';

/** Arrival times of messages by id, so a sender can wait for its own message. */
export class Arrivals {
  private readonly arrived = new Map<string, number>();
  private readonly waiting = new Map<string, (at: number) => void>();

  receive(id: string): void {
    const at = now();
    const waiter = this.waiting.get(id);
    if (waiter) {
      this.waiting.delete(id);
      waiter(at);
    } else {
      this.arrived.set(id, at);
    }
  }

  /** When the message `id` arrived (now or later); rejects after a timeout. */
  when(id: string, timeoutMs = 30_000): Promise<number> {
    const at = this.arrived.get(id);
    if (at !== undefined) {
      this.arrived.delete(id);
      return Promise.resolve(at);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(new Error(`message ${id} not received within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiting.set(id, (t) => {
        clearTimeout(timer);
        resolve(t);
      });
    });
  }
}
