/** The sample's order flow: an order ships once its payment and every item's stock are done. */
export const ORDERS = 'orders';
export const PAYMENTS = 'payments';
export const STOCK = 'stock';

export interface OrderItem {
  sku: string;
  qty: number;
}

/** The parent job: the order. */
export interface Order {
  customer: string;
  amountCents: number;
  items: OrderItem[];
}

/** A child in `payments`. */
export interface PaymentJob {
  customer: string;
  amountCents: number;
  /** Sample knob: the card is declined (the order then fails). */
  decline?: boolean;
}

export interface PaymentResult {
  chargeId: string;
}

export interface StockResult {
  sku: string;
  reserved: number;
}

/** What the order's handler returns once it shipped. */
export interface Shipment {
  shipmentId: string;
  chargeId: string;
  reserved: StockResult[];
}
